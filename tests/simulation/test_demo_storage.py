"""The demo's storage levels off: a tick writes one point per serving counter, and retention
bounds what is kept to the points of the ticks it covers (BENCHMARKS.md "Demo storage")."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from simulation.models import TwinRun
from simulation.services import twin_tick
from telemetry.models import Frame, Sample
from telemetry.store.compaction import rollups_compact
from telemetry.store.frame_codec import is_compressed
from telemetry.store.retention import RetentionPolicy, telemetry_prune
from tests.simulation.conftest import frame_values

TICK = 10


def serving_rows(cluster) -> int:
    return Sample.objects.filter(
        entity__cluster=cluster, metric__name__startswith="serving_"
    ).count()


def serving_series(cluster) -> int:
    return (
        Sample.objects.filter(entity__cluster=cluster, metric__name__startswith="serving_")
        .values("metric_id", "entity_id")
        .distinct()
        .count()
    )


def tick(run: TwinRun, at: float) -> None:
    run.refresh_from_db()
    assert twin_tick(run_id=run.pk, expected_seq=run.tick_seq, tick_time=at).committed


@pytest.mark.django_db
def test_a_demo_tick_stores_one_point_per_serving_counter_and_retention_bounds_them(
    twin_run, settings
):
    settings.TELEMETRY_RAW_FRAME_SECONDS = TICK  # the demo's: one raw point per tick
    # The demo's ten engine steps per tick (seed_twin), each of which has a row per counter.
    TwinRun.objects.filter(pk=twin_run.pk).update(steps_per_tick=10)
    start = time.time() - 4 * 3600
    for i in range(3):
        tick(twin_run, start + TICK * i)
    series = serving_series(twin_run.cluster)
    assert series > 0
    assert serving_rows(twin_run.cluster) <= 3 * series  # not one per engine step (30 each)

    # Hours later (the twin went on ticking; one more tick here): what retention keeps is
    # bounded by the ticks its window covers, not by how long the demo has run.
    later = start + 2 * 3600 + 30 * 60
    tick(twin_run, later)
    rollups_compact(now=later)
    policy = RetentionPolicy(
        raw_accelerator=timedelta(hours=1),
        raw_other=timedelta(hours=2),
        rollup={
            60: timedelta(days=8),
            900: timedelta(days=35),
            3600: timedelta(days=30),
            86400: timedelta(days=1100),
        },
    )
    telemetry_prune(policy=policy, now=datetime.fromtimestamp(later, tz=UTC))
    assert serving_rows(twin_run.cluster) <= series * (2 * 3600 // TICK)
    assert serving_rows(twin_run.cluster) == serving_series(twin_run.cluster) == series


@pytest.mark.django_db
def test_a_demo_tick_stores_its_mostly_empty_workload_arrays_compressed(twin_run, settings):
    settings.TELEMETRY_FRAME_COMPRESSION = True  # the demo's default (SQLite)
    start = time.time() - 600
    for i in range(2):
        tick(twin_run, start + TICK * i)
    frames = Frame.objects.filter(
        layout__cluster=twin_run.cluster, layout__kind="workload", resolution=0
    ).values_list("values", "layout__size")
    assert frames
    stored = sum(len(bytes(values)) for values, _ in frames)
    plain = sum(4 * size for _, size in frames)
    assert any(is_compressed(bytes(values)) for values, _ in frames)
    assert stored < plain / 5
    # Nothing lost on the way: the raw frames' values are what the minute rollups counted.
    assert frame_values(twin_run.cluster, 0) == frame_values(twin_run.cluster, 60) > 0
