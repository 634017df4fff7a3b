"""What readers of different ranges share: snapshots (no time axis) and the fleet's newest
values are read once per few seconds, however many custom ranges are asked for."""

# ruff: noqa: F811 (pytest fixtures imported from dashboards_fixtures are used as arguments)
from __future__ import annotations

import pytest

from dashboards.api import views as dashboards
from dashboards.selectors import service_slo
from tests.dashboards.dashboards_fixtures import twin_cluster  # noqa: F401

RANGES = (
    "range=6h",
    "range=7d",
    "start=2026-11-01T00:00:00%2B00:00&end=2026-11-02T00:00:00%2B00:00",
)


def count_builds(monkeypatch, view) -> list[int]:
    calls: list[int] = []
    original = view.build

    def counting(self, request, tr, **kwargs):
        calls.append(1)
        return original(self, request, tr, **kwargs)

    monkeypatch.setattr(view, "build", counting)
    return calls


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("view", "path"),
    [
        (dashboards.HardwareDataView, "/api/v1/dashboards/hardware/?cluster=twin-dash&"),
        (dashboards.WorkloadListDataView, "/api/v1/dashboards/workloads/?"),
    ],
)
def test_a_snapshot_page_is_built_once_for_every_range_and_echoes_each_range(
    client_as, twin_cluster, dashboard_cache, monkeypatch, view, path
):
    calls = count_builds(monkeypatch, view)
    client = client_as("operator")
    echoed = []
    for query in RANGES:
        response = client.get(path + query)
        assert response.status_code == 200
        echoed.append(response.json()["range"]["start"][:10])
    assert len(calls) == 1
    assert echoed[2] == "2026-11-01"  # the custom range is echoed, not the first one's
    assert echoed[0] != echoed[2]


@pytest.mark.django_db
def test_a_page_with_time_charts_is_built_per_range(
    client_as, twin_cluster, dashboard_cache, monkeypatch
):
    calls = count_builds(monkeypatch, dashboards.OverviewDataView)
    client = client_as("operator")
    for query in RANGES:
        assert (
            client.get(f"/api/v1/dashboards/overview/?cluster=twin-dash&{query}").status_code == 200
        )
    assert len(calls) == len(RANGES)


@pytest.mark.django_db
def test_snapshot_pages_still_keep_tenants_apart(client_as, twin_cluster, dashboard_cache):
    acme = client_as("customer").get("/api/v1/dashboards/workloads/?range=6h").json()
    panda = client_as("other_customer").get("/api/v1/dashboards/workloads/?range=7d").json()
    tenant_column = acme["tables"]["workloads"]["columns"].index("tenant")
    assert {row[tenant_column] for row in acme["tables"]["workloads"]["rows"]} == {"acme"}
    assert {row[tenant_column] for row in panda["tables"]["workloads"]["rows"]} == {"panda"}


@pytest.mark.django_db
def test_the_serving_tiles_are_read_once_for_every_range_while_fresh(
    client_as, twin_cluster, dashboard_cache, monkeypatch
):
    reads: list[int] = []
    original = service_slo.entity_window_sums

    def counting(**kwargs):
        reads.append(kwargs["cluster"].pk)
        return original(**kwargs)

    monkeypatch.setattr(service_slo, "entity_window_sums", counting)
    client = client_as("operator")
    for query in RANGES:
        assert (
            client.get(f"/api/v1/dashboards/overview/?cluster=twin-dash&{query}").status_code == 200
        )
    # The tiles cover the last five minutes whatever the range: one read while fresh.
    assert reads == [twin_cluster.pk]


@pytest.mark.django_db
def test_without_the_cache_every_request_reads_the_store(
    client_as, twin_cluster, settings, monkeypatch
):
    settings.DASHBOARD_CACHE_SECONDS = 0
    reads: list[int] = []
    original = service_slo.entity_window_sums
    monkeypatch.setattr(
        service_slo, "entity_window_sums", lambda **kw: reads.append(1) or original(**kw)
    )
    client = client_as("operator")
    for query in RANGES[:2]:
        client.get(f"/api/v1/dashboards/overview/?cluster=twin-dash&{query}")
    assert len(reads) == 2
