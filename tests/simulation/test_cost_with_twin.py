"""Cost page and report over telemetry the twin really wrote (a tick of a small run)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cost.selectors import cluster_cost
from simulation.services import twin_tick
from telemetry.read import cluster_stat


@pytest.mark.django_db
def test_twin_telemetry_prices_the_cluster_from_measured_power(twin_run, client_as):
    twin_tick(run_id=twin_run.pk, expected_seq=0)
    cluster = twin_run.cluster
    end = datetime.now(tz=UTC) + timedelta(minutes=1)
    start = end - timedelta(hours=1)
    power = cluster_stat(cluster, "cluster_power_watts", start, end)
    assert power is not None and power.mean > 0
    cost = cluster_cost(cluster, start, end)
    assert cost.cards == 256 and cost.asset.energy.measured
    assert cost.asset.energy.it_power_watts == pytest.approx(power.mean)
    assert cost.has_usage  # workload_allocated_cards frames were read
    row = next(
        r
        for r in client_as("operator").get("/api/v1/cost/clusters/").json()["results"]
        if r["cluster"] == cluster.name
    )
    assert row["asset"]["energy_source"] == "measured"
    page = client_as("operator").get(f"/report/?unified={cluster.pk}&baseline={cluster.pk}")
    assert page.context["uni"].samples is not None
