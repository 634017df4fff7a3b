"""PromQL data sources (issue 22 part 7): operators manage them, ``read`` reads them, and a
source that is down neither fails a list nor shows its address to a token."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from accounts.services.tokens import token_create
from inventory.models import Accelerator, Cluster, Node
from telemetry.models import Entity, PromQLDataSource

DOWN_URL = "http://127.0.0.1:9"  # refused by the outbound policy, and nothing listens there


def _token_client(scopes: list[str]) -> APIClient:
    client = APIClient()
    client.credentials(
        HTTP_AUTHORIZATION=f"Bearer {token_create(name='t', scopes=scopes).plaintext}"
    )
    return client


@pytest.fixture
def down_cluster(db) -> Cluster:
    """A PromQL-sourced cluster whose server cannot be reached, with one registered card."""
    cluster = Cluster.objects.create(name="thanos-down", kind=Cluster.Kind.LEGACY)
    PromQLDataSource.objects.create(cluster=cluster, url=DOWN_URL)
    node = Node.objects.create(cluster=cluster, hostname="dgx-01")
    card = Accelerator.objects.create(node=node, index=0, vendor_id="GPU-aaa")
    Entity.objects.create(
        cluster=cluster, kind="accelerator", key="GPU-aaa", node=node, accelerator=card
    )
    return cluster


@pytest.mark.django_db
def test_operators_register_a_sources_cards_and_others_may_not(client_as, down_cluster):
    source = PromQLDataSource.objects.get(cluster=down_cluster)
    url = f"/api/v1/promql-sources/{source.pk}/sync/"
    for role in ("approver", "customer"):
        assert client_as(role).post(url).status_code == 403, role
    assert _token_client(["read"]).post(url).status_code == 403
    # The operator is let through to the server, which is down: a 503 saying so.
    answer = client_as("operator").post(url)
    assert answer.status_code == 503
    assert answer.json()["code"] == "data_source_unavailable"


@pytest.mark.django_db
def test_an_operator_manages_sources_in_the_api_and_the_admin(client_as):
    client = client_as("operator")
    Cluster.objects.create(name="thanos-b", kind=Cluster.Kind.LEGACY)
    created = client.post(
        "/api/v1/promql-sources/",
        {"cluster": "thanos-b", "url": "https://thanos.example.com", "enabled": False},
        content_type="application/json",
    )
    assert created.status_code == 201, created.content
    source = PromQLDataSource.objects.get(cluster__name="thanos-b")
    assert client.get("/admin/telemetry/promqldatasource/").status_code == 200
    assert client.get(f"/admin/telemetry/promqldatasource/{source.pk}/change/").status_code == 200


@pytest.mark.django_db
def test_a_read_token_lists_sources_but_cannot_change_them(users):
    cluster = Cluster.objects.create(name="thanos-c", kind=Cluster.Kind.LEGACY)
    PromQLDataSource.objects.create(cluster=cluster, url="https://thanos.example.com")
    client = _token_client(["read"])
    listed = client.get("/api/v1/promql-sources/")
    assert listed.status_code == 200
    assert [s["cluster"] for s in listed.json()["results"]] == ["thanos-c"]
    refused = client.post(
        "/api/v1/promql-sources/",
        {"cluster": "thanos-c", "url": "https://other.example.com"},
        format="json",
    )
    assert refused.status_code == 403
    assert PromQLDataSource.objects.get().url == "https://thanos.example.com"


@pytest.mark.django_db
def test_the_accelerator_list_answers_with_values_unavailable_when_the_source_is_down(
    client_as, down_cluster
):
    response = client_as("operator").get("/api/v1/accelerators/?cluster=thanos-down")
    assert response.status_code == 200
    (card,) = response.json()["results"]
    assert card["vendor_id"] == "GPU-aaa"
    assert card["latest_status"] == "unavailable" and card["latest"] == {}


@pytest.mark.django_db
def test_a_503_to_a_read_token_shows_neither_the_source_url_nor_an_error_number(down_cluster):
    response = _token_client(["read"]).get(
        "/api/v1/telemetry/series/?metric=accelerator_utilization_ratio&entity=GPU-aaa"
        "&cluster=thanos-down"
    )
    assert response.status_code == 503
    body = response.content.decode()
    assert "127.0.0.1" not in body and DOWN_URL not in body
    assert "errno" not in body.lower() and "staff_detail" not in body
