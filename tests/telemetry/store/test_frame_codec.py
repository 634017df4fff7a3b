"""Frame arrays stored plain or compressed: the same figures whichever form a row is in."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from django.db import transaction
from django.test import override_settings

from cluster_portal.web.timerange import TimeRange
from telemetry.models import Entity, Frame, FrameLayout, MetricDefinition
from telemetry.read import (
    frame_means,
    kind_series,
    latest_kind,
    latest_values,
    series_read,
    top_entities,
)
from telemetry.read.local.entity_windows import window_raw_values
from telemetry.receivers.twin import layout_for_keys
from telemetry.store.frame_close import frames_rollups_close
from telemetry.store.frame_codec import frame_array, frame_bytes, frame_value, is_compressed
from telemetry.store.frame_memo import rollups_forget
from telemetry.store.frames import COUNT_DTYPE, SUM_DTYPE, VALUE_DTYPE, frames_write

SIZE = 400  # large enough for compression to be worth it (and used)
KEYS = [f"sn0/r{k // 64}/n{k // 8}/c{k % 8}" for k in range(SIZE)]
METRIC = "accelerator_utilization_ratio"


@pytest.mark.parametrize("dtype", [VALUE_DTYPE, COUNT_DTYPE, SUM_DTYPE])
def test_arrays_read_back_exactly_in_either_form(dtype):
    rng = np.random.default_rng(7)
    sparse = np.zeros(6395, dtype) if dtype == COUNT_DTYPE else np.full(6395, np.nan, dtype)
    sparse[rng.choice(6395, 20, replace=False)] = rng.random(20) * 100
    dense = (rng.random(4096) * 100).astype(dtype)
    for array in (sparse, dense, np.zeros(0, dtype), np.arange(3, dtype=dtype)):
        for compress in (False, True):
            blob = frame_bytes(array, compress=compress)
            assert np.array_equal(frame_array(blob, dtype), array, equal_nan=dtype != COUNT_DTYPE)
    blob = frame_bytes(sparse, compress=True)
    assert is_compressed(blob) and len(blob) < sparse.nbytes / 50
    index = int(np.flatnonzero(sparse)[0]) if dtype == COUNT_DTYPE else 0
    assert frame_value(blob, dtype, index) == sparse[index] or np.isnan(sparse[index])


def test_a_plain_array_is_a_whole_number_of_values_and_a_compressed_one_never_is():
    # Random bits: compression saves nothing, so the array stays plain.
    random = np.random.default_rng(1).integers(0, 2**32, 1000, dtype=np.uint32).view(VALUE_DTYPE)
    assert frame_bytes(random, compress=True) == random.tobytes()
    sparse = np.full(1000, np.nan, np.float32)
    assert len(frame_bytes(sparse, compress=False)) % 4 == 0
    assert len(frame_bytes(sparse, compress=True)) % 4 == 1
    with pytest.raises(ValueError, match="neither plain nor compressed"):
        frame_array(b"\x00" * 9, VALUE_DTYPE)


def _write_minutes(layout, metric, now: float, minutes: range) -> None:
    """A sparse metric (a value for one entity in eight, as per-workload serving metrics) and
    a dense one, every 20 s."""
    rng = np.random.default_rng(3)
    for minute in minutes:
        for step in range(3):
            ts = now - 3600 + 60 * minute + 20 * step
            values = np.full(SIZE, np.nan)
            values[::8] = rng.random(SIZE // 8)
            with transaction.atomic():
                frames_write(layout=layout, values={metric.pk: values}, ts=ts)


def _figures(cluster, metric, now: float) -> tuple:
    """What pages and gates read: one entity's series (raw and minute tiers, cut out in SQL),
    the latest values and kind snapshot, top-N, per-entity means, a kind-wide curve and a
    gate's raw window."""
    entity = Entity.objects.get(cluster=cluster, kind="accelerator", key=KEYS[8])
    when = datetime.fromtimestamp(now, UTC)
    raw = series_read(
        metric=metric, entity=entity, start=when - timedelta(minutes=30), end=when
    ).points
    minutes = series_read(metric=metric, entity=entity, start=when - timedelta(days=2), end=when)
    snapshot = latest_kind(cluster.pk, "accelerator", [METRIC])
    curve = kind_series(
        cluster_id=cluster.pk,
        kind="accelerator",
        metric=metric,
        tr=TimeRange(start=when - timedelta(hours=2), end=when, preset="2h"),
        reduce="mean",
    )
    window = window_raw_values(
        metric=METRIC,
        cluster_id=cluster.pk,
        entity_kind="accelerator",
        entity_key=KEYS[8],
        start=when - timedelta(hours=2),
        end=when,
    )
    return (
        [(p.ts, p.mean, p.min, p.max, p.count) for p in raw],
        minutes.source,
        [(p.ts, p.mean, p.min, p.max, p.count) for p in minutes.points],
        latest_values([entity])[entity.pk],
        snapshot.ids.tolist(),
        np.nan_to_num(snapshot.values[METRIC], nan=-1).tolist(),
        top_entities(metric=metric, cluster_id=cluster.pk, since=when - timedelta(hours=2)),
        frame_means(metric=metric, cluster_id=cluster.pk, since=when - timedelta(hours=2)),
        curve,
        window.tolist(),
    )


def _reset_frames() -> None:
    Frame.objects.all().delete()
    FrameLayout.objects.update(coarse_until=None)
    rollups_forget()


@pytest.mark.django_db
def test_reads_give_the_same_figures_from_plain_compressed_and_mixed_frames(cluster):
    metric = MetricDefinition.objects.get(name=METRIC)
    layout = layout_for_keys(cluster, "accelerator", KEYS)
    now = time.time()
    figures = {}
    for name, first, second in (
        ("plain", False, False),
        ("compressed", True, True),
        ("mixed", False, True),  # old plain rows, newer compressed ones merged into them
    ):
        _reset_frames()
        with override_settings(TELEMETRY_FRAME_COMPRESSION=first):
            _write_minutes(layout, metric, now, range(0, 30))
            frames_rollups_close(now=now - 1800)
        with override_settings(TELEMETRY_FRAME_COMPRESSION=second):
            _write_minutes(layout, metric, now, range(30, 60))
            frames_rollups_close(now=now)
        stored = Frame.objects.values_list("values", "count")
        compressed = sum(is_compressed(bytes(v if v is not None else c)) for v, c in stored)
        assert (compressed > 0) == (first or second), name
        figures[name] = _figures(cluster, metric, now)
    assert figures["plain"][0] and figures["plain"][2]  # the comparison compares something
    assert figures["compressed"] == figures["plain"]
    assert figures["mixed"] == figures["plain"]
