"""``telemetry.read.serving_windows`` (issue 30 item 1): many workloads' serving figures over
one window — each, and pooled from the sum of their buckets — with the counters' increases
computed in the database exactly as ``counter_increase`` computes them (resets included)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import transaction

from inventory.models import Cluster
from telemetry.models import Entity
from telemetry.read import serving_window, serving_windows, window_aggregate
from telemetry.read.local.histograms import counter_increase, histogram_quantile
from telemetry.read.local.serving_many import _serving_metrics, increases
from telemetry.receivers.twin import samples_write
from tests.cost.cost_data import add_workload, make_cluster, metric, minutes_ago
from tests.dashboards.serving_data import buckets_of, write_requests

pytestmark = pytest.mark.django_db


def _window():
    now = datetime.now(tz=UTC)
    return now - timedelta(minutes=10), now


def test_increases_in_sql_match_counter_increase_across_a_reset(tenants):
    cluster = make_cluster("c", Cluster.Kind.UNIFIED, cards=8)
    w = add_workload(cluster, tenants["acme"], "svc", "inference", 1, None)
    entity = Entity.objects.get(workload=w)
    values = [5.0, 9.0, 12.0, 2.0, 7.0, 7.0, 30.0]  # a restart after 12
    m = metric("serving_requests_success_total", "workload")
    with transaction.atomic():
        samples_write([(m.pk, entity.pk, minutes_ago(8 - i), v) for i, v in enumerate(values)])
    start, end = _window()
    [(name, entity_id, points, inc)] = increases([entity.pk], {m.pk: m.name}, start, end)
    assert (name, entity_id, points) == (m.name, entity.pk, 7)
    assert inc == pytest.approx(counter_increase(values)) == pytest.approx(7 + 2 + 5 + 23)


def test_each_workloads_window_equals_serving_window_and_the_pool_sums_the_buckets(tenants):
    cluster = make_cluster("c", Cluster.Kind.UNIFIED, cards=8)
    steps = {
        "fast": {"ttft": [0.02] * 98 + [0.3, 0.3], "tpot": [0.02] * 100},
        "slow": {"ttft": [0.9] * 20, "tpot": [0.2] * 20},
    }
    ids = {}
    for name, step in steps.items():
        w = add_workload(cluster, tenants["acme"], name, "inference", 1, None)
        ids[name] = w.pk
        write_requests(
            Entity.objects.get(workload=w), [(minutes_ago(3), step), (minutes_ago(2), step)]
        )
    start, end = _window()
    found = serving_windows(
        cluster_id=cluster.pk, workload_ids=list(ids.values()), start=start, end=end
    )
    for name, pk in ids.items():
        one = serving_window(cluster_id=cluster.pk, workload_id=pk, start=start, end=end)
        mine = found.by_workload[pk]
        assert mine.requests == one.requests == 2 * len(steps[name]["ttft"])
        for q in ("p50", "p95", "p99"):
            assert mine.ttft[q] == pytest.approx(one.ttft[q])
            assert mine.tpot[q] == pytest.approx(one.tpot[q])
    every = [x for step in steps.values() for x in step["ttft"] * 2]
    assert found.pooled.requests == len(every)
    assert found.pooled.ttft["p99"] == pytest.approx(
        histogram_quantile(0.99, buckets_of("serving_ttft_seconds", every))
    )
    # An empty window: no requests, no percentile (None, not 0).
    empty = serving_windows(
        cluster_id=cluster.pk,
        workload_ids=list(ids.values()),
        start=start - timedelta(hours=2),
        end=start - timedelta(hours=1),
    )
    assert empty.pooled.requests == 0 and empty.pooled.ttft["p99"] is None
    assert _serving_metrics()  # the bucket names are in the catalogue


def test_a_gate_asking_p99_of_the_per_step_p99_reads_the_histogram(tenants):
    cluster = make_cluster("c", Cluster.Kind.UNIFIED, cards=8)
    w = add_workload(cluster, tenants["acme"], "svc", "inference", 1, None)
    entity = Entity.objects.get(workload=w)
    step = {"ttft": [0.03] * 95 + [2.0] * 5}
    write_requests(entity, [(minutes_ago(3), step), (minutes_ago(2), step)])
    m = metric("inference_ttft_p99_seconds", "workload")
    with transaction.atomic():  # per-step values that say nothing of the tail
        samples_write([(m.pk, entity.pk, minutes_ago(i), 0.04) for i in (2, 3)])
    start, end = _window()
    got = window_aggregate(
        metric="inference_ttft_p99_seconds",
        cluster_id=cluster.pk,
        entity_kind="workload",
        entity_key="svc",
        aggregation="p99",
        start=start,
        end=end,
    )
    assert got.value == pytest.approx(
        histogram_quantile(0.99, buckets_of("serving_ttft_seconds", step["ttft"]))
    )
    assert got.value > 1.0
