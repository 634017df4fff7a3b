"""Who may import an inventory: operators only (page and API); the API's answers."""

from __future__ import annotations

import json

import pytest

from inventory.models import Node
from tests.access import ApiAccessCases, PageAccessCases
from tests.factories import ClusterFactory

CSV = "hostname,rack,supernode\ngpu-a01,r01,sn1\n"
OPERATORS = ("operator",)


def import_url() -> str:
    return f"/api/v1/clusters/{ClusterFactory(name='import-target').name}/inventory-import/"


class TestInventoryImportApi(ApiAccessCases):
    route = "api:inventory-import"
    method = "post"
    allowed_roles = OPERATORS

    def get_url(self, users) -> str:
        return import_url()

    def post_data(self, users) -> dict:
        return {"content": CSV, "format": "csv", "dry_run": True}


class TestInventoryImportPage(PageAccessCases):
    url = "/inventory/import/"
    route = "inventory-import"
    allowed_roles = OPERATORS


@pytest.mark.django_db
def test_the_api_imports_then_answers_unchanged_on_a_repeat(client_as):
    client, url = client_as("operator"), import_url()
    body = json.dumps({"content": CSV})
    first = client.post(url, body, content_type="application/json")
    assert first.status_code == 201, first.json()
    assert first.json()["nodes"] == {"created": 1, "updated": 0, "unchanged": 0}
    again = client.post(url, body, content_type="application/json")
    assert again.json()["nodes"] == {"created": 0, "updated": 0, "unchanged": 1}


@pytest.mark.django_db
def test_the_api_refuses_a_bad_file_listing_lines_and_writes_nothing(client_as):
    client, url = client_as("operator"), import_url()
    bad = "hostname,rack,card_model\n,r1,\ngpu-2,r1,z9000\n"
    response = client.post(url, json.dumps({"content": bad}), content_type="application/json")
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert [(e["line"], e["field"]) for e in errors] == [(2, "hostname"), (3, "card_model")]
    assert "z9000" in errors[1]["message"]
    assert not Node.objects.filter(cluster__name="import-target").exists()


@pytest.mark.django_db
def test_the_api_takes_an_uploaded_file_and_a_dry_run_query(client_as, tmp_path):
    client, url = client_as("operator"), import_url()
    path = tmp_path / "racks.csv"
    path.write_text(CSV)
    with path.open("rb") as upload:
        response = client.post(f"{url}?dry_run=true", {"file": upload})
    assert response.status_code == 200, response.json()
    assert response.json()["dry_run"] is True
    assert not Node.objects.filter(cluster__name="import-target").exists()


@pytest.mark.django_db
def test_an_unknown_cluster_is_a_404(client_as):
    response = client_as("operator").post(
        "/api/v1/clusters/nope/inventory-import/",
        json.dumps({"content": CSV}),
        content_type="application/json",
    )
    assert response.status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize("body", ["null", "5", '"hostname,rack"', "[1, 2]"])
def test_a_body_that_is_not_an_object_is_a_400_naming_it(client_as, body):
    response = client_as("operator").post(import_url(), body, content_type="application/json")
    assert response.status_code == 400
    assert "JSON object" in json.dumps(response.json())


@pytest.mark.django_db
def test_a_huge_bad_file_lists_the_first_hundred_problems_and_counts_the_rest(client_as):
    # A 49,999-row bad import once answered a 12.97 MB error list.
    bad = "hostname,rack,card_count\n" + "".join(f"gpu-{i},r1,x\n" for i in range(5_000))
    response = client_as("operator").post(
        import_url(), json.dumps({"content": bad}), content_type="application/json"
    )
    assert response.status_code == 400
    body = response.json()
    assert len(body["errors"]) == body["errors_listed"] == 100
    assert body["error_count"] == 5_000
    assert [e["line"] for e in body["errors"][:2]] == [2, 3]
    assert len(response.content) < 50_000
    assert not Node.objects.filter(cluster__name="import-target").exists()
