"""The workload list, page and API (issue 24 part 8): paginated, filterable by kind, state,
tenant, cluster and name, finished jobs hidden by default on the page, unknown parameters and
bad values answered 400 naming them."""

from __future__ import annotations

import numpy as np
import pytest

from dashboards.selectors.workload_list import PAGE_SIZE, WorkloadList, workload_states
from dashboards.selectors.workloads import LIST_METRICS, WorkloadColumns, WorkloadSummary
from inventory.models import Cluster, Workload
from tests.dashboards.dashboards_fixtures import tenant_workload, twin_cluster  # noqa: F401


def summary(pk: int, kind: str) -> WorkloadSummary:
    return WorkloadSummary(pk, f"w{pk}", kind, "core", "acme", 1, "c", None, None, None)


def columns(rows: list[tuple[str, dict[str, float]]]) -> WorkloadColumns:
    values = {name: np.full(len(rows), np.nan) for name in LIST_METRICS}
    for i, (_kind, figures) in enumerate(rows):
        for name, value in figures.items():
            values[name][i] = value
    return WorkloadColumns([summary(i, kind) for i, (kind, _f) in enumerate(rows)], values)


def test_states_come_from_the_newest_figures():
    listed = columns(
        [
            ("training", {"training_state": 0}),
            ("training", {"training_state": 1}),
            ("training", {"training_state": 2, "workload_allocated_cards": 8}),
            ("training", {"training_state": 3}),
            ("inference", {"workload_allocated_cards": 4, "inference_replicas": 1}),
            ("inference", {"workload_allocated_cards": 0, "inference_replicas": 0}),
            ("inference", {}),
            ("training", {}),
        ]
    )
    assert workload_states(listed).tolist() == [
        "pending", "queued", "running", "finished", "serving", "idle", "unknown", "unknown",
    ]  # fmt: skip


def test_a_page_is_cut_from_the_filtered_list_and_clamped_to_the_last():
    listed = columns([("training", {"training_state": 2})] * 120)
    full = WorkloadList(listed, workload_states(listed))
    page, rows = full.page(2)
    assert (page.number, len(rows), rows.columns.workloads[0].pk) == (2, PAGE_SIZE, PAGE_SIZE)
    page, rows = full.page(99)
    assert page.number == 3 and len(rows) == 120 - 2 * PAGE_SIZE


@pytest.fixture
def fleet(db, tenants):
    """Enough workloads for three pages, two tenants, two clusters (no telemetry: no data)."""
    legacy = Cluster.objects.create(name="legacy", kind=Cluster.Kind.SPLIT)
    unified = Cluster.objects.create(name="unified", kind=Cluster.Kind.UNIFIED)
    for i in range(2 * PAGE_SIZE + 5):
        Workload.objects.create(
            tenant=tenants["acme" if i % 2 else "panda"],
            cluster=legacy if i % 3 else unified,
            name=f"train-{i:04d}",
            kind="training",
        )
    Workload.objects.create(tenant=tenants["acme"], cluster=unified, name="chat", kind="inference")


def rows_of(html: str) -> int:
    return html.count("data-workload-id=")


@pytest.mark.django_db
def test_the_page_shows_one_page_of_rows_with_a_pager(client_as, fleet):
    html = client_as("operator").get("/workloads/").content.decode()
    assert rows_of(html) == PAGE_SIZE
    assert 'rel="next"' in html and "Page 1 of 3" in html
    assert f"of {2 * PAGE_SIZE + 6} workloads" in html
    last = client_as("operator").get("/workloads/?page=3").content.decode()
    assert rows_of(last) == 6


@pytest.mark.django_db
def test_the_page_filters_by_name_tenant_cluster_and_kind(client_as, fleet):
    client = client_as("operator")
    html = client.get("/workloads/", {"name": "TRAIN-000"}).content.decode()
    assert rows_of(html) == 10  # train-0000 … train-0009
    html = client.get("/workloads/", {"kind": "inference"}).content.decode()
    assert rows_of(html) == 1 and ">chat<" in html
    expected = Workload.objects.filter(tenant__slug="acme", cluster__name="unified").count()
    html = client.get("/workloads/", {"tenant": "acme", "cluster": "unified"}).content.decode()
    assert rows_of(html) == expected
    # The pager keeps the filters.
    html = client.get("/workloads/", {"tenant": "panda"}).content.decode()
    assert "tenant=panda&amp;page=2" in html


@pytest.mark.django_db
def test_the_page_answers_an_unknown_parameter_or_value_with_a_400_naming_it(client_as, fleet):
    client = client_as("operator")
    response = client.get("/workloads/", {"nmae": "x"})
    assert response.status_code == 400 and b"<code>nmae</code>" in response.content
    response = client.get("/workloads/", {"state": "sleeping"})
    assert response.status_code == 400 and b"<code>state</code>" in response.content
    response = client.get("/workloads/", {"cluster": "nowhere"})
    assert response.status_code == 400 and b"<code>cluster</code>" in response.content


@pytest.mark.django_db
def test_a_customer_cannot_filter_their_way_to_another_tenant(client_as, fleet):
    response = client_as("customer").get("/workloads/", {"tenant": "panda"})
    assert response.status_code == 400  # not one of the tenants they may name
    html = client_as("customer").get("/workloads/", {"state": "all"}).content.decode()
    assert rows_of(html) == 0  # fleet workloads have no entity: nothing visible to customers


@pytest.mark.django_db
def test_finished_jobs_are_hidden_on_the_page_unless_asked_for(client_as, twin_cluster):  # noqa: F811
    from dashboards.selectors.workload_list import WorkloadListQuery, workload_list

    listed = workload_list(_staff(), WorkloadListQuery(state="all"))
    states = set(listed.states.tolist())
    assert states & {"running", "queued", "serving"}, states
    client = client_as("operator")
    shown = rows_of(client.get("/workloads/", {"state": "all"}).content.decode())
    assert shown == min(len(listed), PAGE_SIZE)
    active = len(workload_list(_staff(), WorkloadListQuery(state="active")))
    assert rows_of(client.get("/workloads/").content.decode()) == min(active, PAGE_SIZE)
    running = workload_list(_staff(), WorkloadListQuery(state="running"))
    assert set(running.states.tolist()) <= {"running"}


def _staff():
    from accounts.models import User

    return User.objects.get(username="op")


@pytest.mark.django_db
def test_the_api_paginates_filters_and_refuses_unknown_parameters(client_as, fleet):
    client = client_as("operator")
    body = client.get("/api/v1/dashboards/workloads/", {"page_size": 10, "page": 2}).json()
    assert body["pagination"] == {"page": 2, "pages": 11, "page_size": 10, "count": 106}
    assert len(body["tables"]["workloads"]["rows"]) == 10
    body = client.get("/api/v1/dashboards/workloads/", {"name": "chat"}).json()
    assert [row[1] for row in body["tables"]["workloads"]["rows"]] == ["chat"]
    response = client.get("/api/v1/dashboards/workloads/", {"nmae": "chat"})
    assert response.status_code == 400 and list(response.json()["errors"]) == ["nmae"]
    response = client.get("/api/v1/dashboards/workloads/", {"state": "sleeping"})
    assert response.status_code == 400 and list(response.json()["errors"]) == ["state"]
    # The CSV is every matching row, not one page.
    csv = client.get("/api/v1/dashboards/workloads/", {"format": "csv", "table": "workloads"})
    assert csv.status_code == 200 and csv.content.decode().count("\n") == 106 + 1
