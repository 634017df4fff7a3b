"""Showback bills only the time the telemetry covers, and says so."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta

import pytest

from cost.coverage import covered_seconds
from cost.models import CostAssumptions
from inventory.models import Cluster
from tests.cost.cost_data import add_workload, make_cluster, write_cluster
from tests.cost.test_cost_page import INPUTS

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _minutes(*offsets: int) -> list[datetime]:
    return [T0 + timedelta(minutes=m) for m in offsets]


def test_forty_minutes_of_one_minute_points_cover_forty_minutes() -> None:
    stamps = _minutes(*range(40))
    assert covered_seconds(stamps, step_seconds=6, window_seconds=86400) == 40 * 60


def test_an_outage_between_points_is_not_covered() -> None:
    stamps = _minutes(*range(10), *range(100, 110))  # 10 min, a 90-minute outage, 10 min
    covered = covered_seconds(stamps, step_seconds=60, window_seconds=86400)
    assert covered == pytest.approx(20 * 60 + 2 * 60)  # the gap counts 3 intervals at most


def test_no_points_cover_nothing_and_coverage_never_exceeds_the_window() -> None:
    assert covered_seconds([], step_seconds=60, window_seconds=3600) == 0
    assert covered_seconds(_minutes(*range(120)), step_seconds=60, window_seconds=3600) == 3600


@pytest.fixture
def young_cluster(db, tenants) -> Cluster:
    """A cluster that has reported for 40 minutes (one point a minute)."""
    CostAssumptions.objects.create(**INPUTS)
    uni = make_cluster("uni", Cluster.Kind.UNIFIED, cards=100)
    write_cluster(uni, {"cluster_utilization_allocated_ratio": [0.5] * 40})
    add_workload(uni, tenants["acme"], "acme-chat", "inference", 20, [20.0] * 40)
    return uni


def test_showback_on_forty_minutes_of_data_bills_forty_minutes(young_cluster, client_as):
    client = client_as("customer")
    rows = list(csv.DictReader(io.StringIO(client.get("/cost/?format=csv").content.decode())))
    assert float(rows[0]["covered_hours"]) == pytest.approx(40 / 60, abs=0.02)
    # Within a cent per hour the 40 minutes touch: each ledger hour is kept in whole cents.
    assert float(rows[0]["cost_window"]) == pytest.approx(
        float(rows[0]["cost_per_hour"]) * float(rows[0]["covered_hours"]), abs=0.02
    )
    page = client.get("/cost/").content.decode()
    assert "billed for 40 min of data in the 24 h window" in page
    assert "Cost of the covered time" in page and "Cost in window" not in page


def test_partial_first_and_last_rollup_buckets_count_their_share() -> None:
    # 40 one-minute values in 3-minute buckets: 1 + 13 × 3 + 0 … the edges hold fewer.
    counts = [1, *[3] * 13]
    stamps = [T0 + timedelta(minutes=3 * i) for i in range(len(counts))]
    covered = covered_seconds(stamps, counts=counts, step_seconds=180, window_seconds=86400)
    assert covered == pytest.approx(40 * 60)
