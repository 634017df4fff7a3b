"""Dashboard data endpoints with real twin telemetry: access, scoping, CSV, ranges, queries."""

# ruff: noqa: F811 (pytest fixtures imported from dashboards_fixtures are used as arguments)
from __future__ import annotations

import csv
import io

import pytest

from inventory.models import Accelerator, Node, Rack, Workload
from tests.access import ALL_ROLES, ApiAccessCases
from tests.dashboards.dashboards_fixtures import (  # noqa: F401
    WithInventory,
    tenant_workload,
    twin_cluster,
)

STAFF = ("operator", "approver")


class TestOverviewAccess(WithInventory, ApiAccessCases):
    url = "/api/v1/dashboards/overview/"
    allowed_roles = STAFF


class TestHardwareAccess(WithInventory, ApiAccessCases):
    url = "/api/v1/dashboards/hardware/"
    allowed_roles = STAFF


class TestMemoryAccess(WithInventory, ApiAccessCases):
    url = "/api/v1/dashboards/memory/"
    allowed_roles = STAFF


class TestNetworkAccess(WithInventory, ApiAccessCases):
    url = "/api/v1/dashboards/network/"
    allowed_roles = STAFF


class TestRackAccess(WithInventory, ApiAccessCases):
    route = "api:dashboard-rack"
    allowed_roles = STAFF

    def get_url(self, users) -> str:
        return f"/api/v1/dashboards/hardware/racks/{Rack.objects.first().pk}/"


class TestNodeAccess(WithInventory, ApiAccessCases):
    route = "api:dashboard-node"
    allowed_roles = STAFF

    def get_url(self, users) -> str:
        return f"/api/v1/dashboards/hardware/nodes/{Node.objects.first().pk}/"


class TestAcceleratorAccess(WithInventory, ApiAccessCases):
    route = "api:dashboard-accelerator"
    allowed_roles = STAFF

    def get_url(self, users) -> str:
        return f"/api/v1/dashboards/hardware/accelerators/{Accelerator.objects.first().pk}/"


class TestWorkloadListAccess(WithInventory, ApiAccessCases):
    url = "/api/v1/dashboards/workloads/"
    allowed_roles = ALL_ROLES

    def list_markers(self, users, tenants) -> list[str]:
        return ["panda-asr"]


class TestWorkloadDetailAccess(WithInventory, ApiAccessCases):
    """Acme's workload: staff and acme read it; panda's customer gets 404 (not 403, which
    would confirm the id exists)."""

    route = "api:dashboard-workload"
    allowed_roles = ("operator", "approver", "customer")
    hidden_roles = ("other_customer",)

    def get_url(self, users) -> str:
        return f"/api/v1/dashboards/workloads/{Workload.objects.get(name='acme-chat').pk}/"

    def other_tenant_url(self, users, tenants) -> str:
        return f"/api/v1/dashboards/workloads/{Workload.objects.get(name='panda-asr').pk}/"


@pytest.mark.django_db
def test_overview_charts_real_cluster_figures(client_as, twin_cluster):
    data = client_as("operator").get("/api/v1/dashboards/overview/?range=1h").json()
    assert data["cluster"] == "twin-dash" and data["range"]["preset"] == "1h"
    kpis = {k["key"]: k for k in data["kpis"]}
    assert kpis["cards_healthy"]["value"] == 256
    assert 0 < kpis["utilization_busy"]["value"] <= 1
    assert kpis["inference_tokens"]["value"] > 0 and kpis["p99_latency"]["value"] > 0
    # TTFT and TPOT P99 are the headline latency; the cluster's figure is labelled.
    assert kpis["ttft"]["value"] > 0 and kpis["tpot"]["value"] > 0
    assert "request-weighted" in kpis["tpot"]["hint"]
    # A counter of requests reads as whole requests (the twin accumulates expected ones).
    assert isinstance(kpis["timeouts"]["value"], int)
    assert kpis["open_alerts"]["value"] == 0
    util = data["figures"]["utilization"]["data"]
    assert len(util) == 2 and all(t["y"] and t["y"][-1] is not None for t in util)
    cards = data["figures"]["cards"]["data"]
    training, inference = cards[0]["y"][-1], cards[1]["y"][-1]
    assert training > 0 and inference > 0 and training + inference <= 256


@pytest.mark.django_db
def test_hardware_heatmap_has_a_cell_per_rack_linking_to_its_page(client_as, twin_cluster):
    data = client_as("operator").get("/api/v1/dashboards/hardware/").json()
    trace = data["figures"]["utilization"]["data"][0]
    racks = Rack.objects.filter(supernode__cluster=twin_cluster)
    assert trace["y"] == ["sn0"] and len(trace["x"]) == racks.count()
    assert all(v is not None and 0 <= v <= 1 for v in trace["z"][0])
    rack = racks.get(name=f"sn0/{trace['x'][0]}")
    assert trace["customdata"][0][0] == f"/dashboards/hardware/racks/{rack.pk}/"
    assert sum(row[3] for row in data["tables"]["racks"]["rows"]) == 256
    health = {k["key"]: k["value"] for k in data["kpis"]}
    assert health["healthy"] + health["unhealthy"] + health["unknown"] == 256


@pytest.mark.django_db
def test_memory_and_network_report_the_twins_pool_and_links(client_as, twin_cluster):
    client = client_as("operator")
    memory = client.get("/api/v1/dashboards/memory/").json()
    pool = memory["tables"]["pools"]
    assert [row[0] for row in pool["rows"]] == ["sn0"]
    row = dict(zip(pool["columns"], pool["rows"][0], strict=True))
    assert row["memory_pool_hbm_live_bytes"] <= row["memory_pool_hbm_reserved_bytes"]
    assert memory["lru_baseline_reported"] is False
    network = client.get("/api/v1/dashboards/network/").json()
    kpis = {k["key"]: k["value"] for k in network["kpis"]}
    assert kpis["links_total"] == 88 and kpis["links_up"] + kpis["links_down"] <= 88
    assert 0 < kpis["communication_ratio"] < 1


@pytest.mark.django_db
def test_customers_list_only_their_tenants_workloads(client_as, twin_cluster):
    # Staff page through every workload (a queuing twin lists more than one page holds).
    operator, seen, page, pages = client_as("operator"), [], 1, 1
    while page <= pages:
        staff = operator.get(f"/api/v1/dashboards/workloads/?page_size=1000&page={page}").json()
        assert staff["pagination"]["count"] == Workload.objects.count()
        seen += [row[0] for row in staff["tables"]["workloads"]["rows"]]
        pages, page = staff["pagination"]["pages"], page + 1
    assert sorted(seen) == sorted(Workload.objects.values_list("pk", flat=True))
    for role, slug in (("customer", "acme"), ("other_customer", "panda")):
        rows = (
            client_as(role)
            .get("/api/v1/dashboards/workloads/")
            .json()["tables"]["workloads"]["rows"]
        )
        assert [r[1] for r in rows] == [tenant_workload(slug).name]
        assert {r[2] for r in rows} == {slug}


@pytest.mark.django_db
def test_workload_detail_shows_ttft_and_tpot_against_the_operator_targets(client_as, twin_cluster):
    workload = tenant_workload("acme")
    data = client_as("customer").get(f"/api/v1/dashboards/workloads/{workload.pk}/").json()
    # The twin copied the scenario's operator targets onto the workload.
    assert data["workload"]["slo_tpot_ms"] == workload.slo_tpot_ms is not None
    assert data["workload"]["slo_ttft_ms"] == workload.slo_ttft_ms is not None
    kpis = {k["key"]: k for k in data["kpis"]}
    assert kpis["slo"]["value"] is not None and kpis["replicas"]["value"] >= 1
    assert kpis["ttft"]["value"] > 0 and kpis["tpot"]["value"] > 0
    assert kpis["tpot"]["hint"] == f"SLO {workload.slo_tpot_ms:,.0f} ms"
    assert isinstance(kpis["timeouts"]["value"], int) and kpis["backlog"]["value"] is not None
    assert "TTFT SLO" in [t["name"] for t in data["figures"]["latency"]["data"]]
    assert "TPOT SLO" in [t["name"] for t in data["figures"]["tpot"]["data"]]


@pytest.mark.django_db
def test_csv_export_rows_match_the_table(client_as, twin_cluster):
    client = client_as("operator")
    table = client.get("/api/v1/dashboards/hardware/").json()["tables"]["racks"]
    response = client.get("/api/v1/dashboards/hardware/?format=csv&table=racks")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0] == table["columns"]
    assert [r[:4] for r in rows[1:]] == [[str(v) for v in r[:4]] for r in table["rows"]]
    assert [float(r[4]) for r in rows[1:]] == pytest.approx([r[4] for r in table["rows"]])
    series = client.get("/api/v1/dashboards/overview/?format=csv&table=utilization")
    assert series.content.decode().splitlines()[0] == "ts,allocated_ratio,busy_ratio"


@pytest.mark.django_db
def test_csv_for_an_unknown_table_is_a_400_naming_the_tables(client_as, cluster):
    response = client_as("operator").get("/api/v1/dashboards/hardware/?format=csv&table=nope")
    assert response.status_code == 400 and b"racks" in response.content


@pytest.mark.django_db
@pytest.mark.parametrize(
    "query", ["range=2w", "start=yesterday", "start=2026-01-02T00:00Z&end=2026-01-01T00:00Z"]
)
def test_invalid_ranges_are_400_with_a_message(client_as, cluster, query):
    response = client_as("operator").get(f"/api/v1/dashboards/overview/?{query}")
    assert response.status_code == 400
    assert set(response.json()["errors"]) <= {"range", "start", "end"}
    assert response.json()["code"] == "invalid" and response.json()["detail"]


@pytest.mark.django_db
def test_unknown_cluster_is_404(client_as, cluster):
    assert client_as("operator").get("/api/v1/dashboards/hardware/?cluster=nope").status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize("page", ("overview", "hardware", "memory", "network", "workloads"))
def test_query_counts_stay_bounded(client_as, twin_cluster, django_assert_max_num_queries, page):
    # The counts do not grow with the cluster: fleet values are one frame row per metric. The
    # bounds are test_query_bounds.py's (per database), which also checks growth with range
    # and fleet size; here on the 256-card twin with a first, cold request.
    from django.db import connection

    from tests.dashboards.test_query_bounds import BUDGETS

    client = client_as("operator")
    with django_assert_max_num_queries(BUDGETS[connection.vendor][page] + 4):
        assert client.get(f"/api/v1/dashboards/{page}/").status_code == 200


@pytest.mark.django_db
def test_dashboard_payloads_are_shared_briefly_but_never_across_tenants(client_as, settings, users):
    from django.core.cache import cache

    from dashboards.api import views as dashboards

    settings.DASHBOARD_CACHE_SECONDS = 30
    cache.clear()
    calls = []
    original = dashboards.WorkloadListDataView.build

    def counting(self, request, tr, **kwargs):
        calls.append(request.user.username)
        return original(self, request, tr, **kwargs)

    dashboards.WorkloadListDataView.build = counting
    try:
        for role in ("operator", "approver", "customer", "customer", "other_customer"):
            client_as(role).get("/api/v1/dashboards/workloads/?range=6h")
    finally:
        dashboards.WorkloadListDataView.build = original
        cache.clear()
    # staff share one entry; each tenant computes its own
    assert calls == ["op", "cust-acme", "cust-panda"]
