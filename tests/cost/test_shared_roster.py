"""Cost windows nobody asked before still share what does not depend on the window: each
cluster's workload roster and card count are read once per few seconds."""

# ruff: noqa: F811 (the priced fixture is imported from the cost page tests)
from __future__ import annotations

import pytest

from cost import selectors
from tests.cost.test_cost_page import priced  # noqa: F401


def count_roster_reads(monkeypatch) -> list[int]:
    reads: list[int] = []
    original = selectors.card_count

    def counting(cluster):
        reads.append(cluster.pk)
        return original(cluster)

    monkeypatch.setattr(selectors, "card_count", counting)
    return reads


@pytest.mark.django_db
def test_unique_windows_read_each_roster_once_and_compute_the_same_figures(
    priced, client_as, dashboard_cache, monkeypatch, settings
):
    reads = count_roster_reads(monkeypatch)
    client = client_as("operator")
    first = client.get("/api/v1/cost/clusters/?hours=24").json()
    again = client.get("/api/v1/cost/clusters/?hours=23.99").json()
    assert sorted(reads) == sorted(c.pk for c in priced.values())
    settings.DASHBOARD_CACHE_SECONDS = 0
    fresh = client.get("/api/v1/cost/clusters/?hours=23.99").json()
    assert [r["workload_per_hour"] for r in again["results"]] == [
        r["workload_per_hour"] for r in fresh["results"]
    ]
    assert [r["cards"] for r in first["results"]] == [r["cards"] for r in fresh["results"]]


@pytest.mark.django_db
def test_a_tenants_showback_reads_only_its_workloads_from_the_shared_roster(
    priced, client_as, dashboard_cache
):
    client_as("operator").get("/api/v1/cost/clusters/?hours=24")  # fills the roster
    rows = client_as("customer").get("/api/v1/cost/showback/?hours=24").json()["results"]
    assert {row["workload"] for row in rows} == {"acme-chat", "acme-queued"}
