"""The twin exports its serving metrics as histograms (issue 23 part 2): the same bucket
counters a vLLM endpoint exports, on the workload's entity, read by the same window function
that gates use, and consistent with the twin's own per-step quantiles."""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime

import numpy as np
import pytest

from inventory.models import Cluster, Workload
from simulation.engine.serving_histograms import TTFT_BOUNDS, bucket_name, step_increments
from telemetry.families.serving import bucket_metric
from telemetry.models import Entity, MetricDefinition
from telemetry.read import series_read, serving_window
from telemetry.read.local.histograms import histogram_quantile


def test_the_twin_names_its_buckets_as_ingestion_does():
    for bound in (*TTFT_BOUNDS, math.inf):
        assert bucket_name("serving_ttft_seconds", bound) == bucket_metric(
            "serving_ttft_seconds", bound
        )


def test_a_steps_buckets_reproduce_its_p50_and_p99():
    values = {
        "inference_request_rate_per_second": np.array([np.nan, 40.0]),
        "inference_ttft_p50_seconds": np.array([np.nan, 0.2]),
        "inference_ttft_p99_seconds": np.array([np.nan, 0.9]),
        "inference_tpot_p50_seconds": np.array([np.nan, 0.03]),
        "inference_tpot_p99_seconds": np.array([np.nan, 0.08]),
    }
    inc = step_increments(values, dt=10.0)
    assert np.isnan(inc["serving_requests_success_total"][0])  # a training job serves nothing
    assert inc["serving_requests_success_total"][1] == pytest.approx(400)
    buckets = [
        (float("inf") if b == math.inf else b, inc[bucket_name("serving_ttft_seconds", b)][1])
        for b in (*TTFT_BOUNDS, math.inf)
    ]
    # Linear interpolation inside vLLM's coarse buckets: within the bucket holding the value.
    assert 0.1 < histogram_quantile(0.5, buckets) <= 0.25
    assert 0.75 < histogram_quantile(0.99, buckets) <= 1.0


@pytest.mark.django_db
def test_twin_ticks_write_counters_the_gate_window_reads(users):
    from simulation.engine import default_scenario
    from simulation.services import twin_run_create, twin_tick

    cluster = Cluster.objects.create(name="twin-uni", kind=Cluster.Kind.UNIFIED)
    run = twin_run_create(name="t", cluster=cluster, scenario=default_scenario(cards=256, seed=3))
    run.status = "running"
    run.save(update_fields=["status"])
    start = time.time()
    for i in range(3):
        run.refresh_from_db()
        assert twin_tick(
            run_id=run.pk, expected_seq=run.tick_seq, tick_time=start + 30 * i
        ).committed
    workload = Workload.objects.get(cluster=cluster, name="chat-llama-3-8b-000")

    found = serving_window(
        cluster_id=cluster.pk,
        workload_id=workload.pk,
        start=datetime.fromtimestamp(start - 60, tz=UTC),
        end=datetime.fromtimestamp(start + 120, tz=UTC),
    )
    assert found.requests > 0 and found.scrapes >= 3
    # The histogram's P99 sits in the vLLM bucket of the twin's own per-step TTFT P99s.
    entity = Entity.objects.get(cluster=cluster, kind="workload", key=workload.name)
    own = series_read(
        metric=MetricDefinition.objects.get(name="inference_ttft_p99_seconds"),
        entity=entity,
        start=datetime.fromtimestamp(start - 60, tz=UTC),
        end=datetime.fromtimestamp(start + 120, tz=UTC),
    )
    highest = max(p.max for p in own.points)
    assert found.ttft["p99"] is not None and 0 < found.ttft["p99"] <= 2.6 * max(highest, 0.001)
