"""Coarse frame tiers folded from closed minutes: the same rollups as folding every frame into
every tier, each minute exactly once (late frames, repeated compaction, layouts written
before the tiers were deferred)."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import numpy as np
import pytest
from django.db import transaction

from telemetry.models import Entity, Frame, FrameLayout, MetricDefinition
from telemetry.receivers.twin import layout_for_keys
from telemetry.store.frame_close import frames_rollups_close
from telemetry.store.frame_codec import frame_array
from telemetry.store.frames import COUNT_DTYPE, SUM_DTYPE, VALUE_DTYPE, frames_write
from telemetry.tasks import compact_rollups

KEYS = [f"n0/c{c}" for c in range(5)]
HOUR = 3600


@pytest.fixture
def util():
    return MetricDefinition.objects.get(name="accelerator_utilization_ratio")


@pytest.fixture
def layout(cluster):
    for key in KEYS:
        Entity.objects.create(cluster=cluster, kind="accelerator", key=key)
    return layout_for_keys(cluster, "accelerator", KEYS)


def write(layout, util, values, ts: float) -> None:
    with transaction.atomic():
        frames_write(layout=layout, values={util.pk: np.asarray(values, float)}, ts=ts)


def tier(util, resolution: int) -> dict[datetime, tuple[np.ndarray, ...]]:
    return {
        f.ts: (
            frame_array(f.count, COUNT_DTYPE),
            frame_array(f.sum, SUM_DTYPE),
            frame_array(f.min, VALUE_DTYPE),
            frame_array(f.max, VALUE_DTYPE),
        )
        for f in Frame.objects.filter(metric=util, resolution=resolution)
    }


@pytest.mark.django_db
def test_compaction_gives_the_coarse_tiers_every_frame_of_every_closed_minute(layout, util):
    rng = np.random.default_rng(3)
    t0 = (time.time() - 3 * HOUR) // HOUR * HOUR
    written = []
    for minute in range(0, 120, 7):  # two hours, several minutes, three frames each
        for second in (5, 25, 45):
            values = rng.random(len(KEYS))
            values[rng.random(len(KEYS)) < 0.2] = np.nan
            write(layout, util, values, t0 + 60 * minute + second)
            written.append(values)
    assert not tier(util, HOUR)  # nothing closed yet: the minute tier only
    result = compact_rollups()
    assert result["frame_minutes_folded"] == len(range(0, 120, 7))
    hours = tier(util, HOUR)
    assert len(hours) == 2
    every = np.array(written)
    count = sum(h[0] for h in hours.values())
    assert count.tolist() == (~np.isnan(every)).sum(axis=0).tolist()
    assert np.allclose(sum(h[1] for h in hours.values()), np.nansum(every, axis=0))
    low = np.fmin.reduce([h[2] for h in hours.values()])
    assert np.allclose(low, np.nanmin(every, axis=0))
    days = tier(util, 86400)
    assert sum(d[0] for d in days.values()).tolist() == count.tolist()
    quarters = tier(util, 900)
    assert sum(q[0] for q in quarters.values()).tolist() == count.tolist()


@pytest.mark.django_db
def test_a_minute_is_folded_once_however_often_compaction_runs(layout, util):
    t0 = 1_780_000_000 // HOUR * HOUR
    for i in range(4):
        write(layout, util, np.full(len(KEYS), 0.5), t0 + 60 * i)
    frames_rollups_close(now=t0 + 5 * 60)
    first = tier(util, HOUR)
    assert first[datetime.fromtimestamp(t0, UTC)][0].tolist() == [4] * len(KEYS)
    assert frames_rollups_close(now=t0 + 5 * 60) == 0
    assert frames_rollups_close(now=t0 + 50 * 60) == 0
    again = tier(util, HOUR)
    assert [a.tolist() for a in again[datetime.fromtimestamp(t0, UTC)]] == [
        a.tolist() for a in first[datetime.fromtimestamp(t0, UTC)]
    ]


@pytest.mark.django_db
def test_an_open_minute_waits_for_compaction_and_a_late_frame_reaches_every_tier(layout, util):
    t0 = 1_780_000_000 // HOUR * HOUR
    write(layout, util, np.full(len(KEYS), 1.0), t0 + 10)
    frames_rollups_close(now=t0 + 50)  # the minute is still open
    assert not tier(util, HOUR)
    frames_rollups_close(now=t0 + 120)
    assert tier(util, HOUR)[datetime.fromtimestamp(t0, UTC)][0].tolist() == [1] * len(KEYS)
    # A frame for the folded minute, arriving after compaction passed it.
    write(layout, util, np.full(len(KEYS), 3.0), t0 + 40)
    hour = tier(util, HOUR)[datetime.fromtimestamp(t0, UTC)]
    assert hour[0].tolist() == [2] * len(KEYS)
    assert hour[1].tolist() == [4.0] * len(KEYS)
    assert tier(util, 60)[datetime.fromtimestamp(t0, UTC)][0].tolist() == [2] * len(KEYS)
    frames_rollups_close(now=t0 + 600)
    assert tier(util, HOUR)[datetime.fromtimestamp(t0, UTC)][0].tolist() == [2] * len(KEYS)


@pytest.mark.django_db
def test_a_layout_whose_minutes_were_folded_on_write_is_not_folded_again(layout, util):
    t0 = 1_780_000_000 // HOUR * HOUR
    write(layout, util, np.full(len(KEYS), 1.0), t0 + 10)
    frames_rollups_close(now=t0 + 120)
    # As on a store upgraded mid-minute: the minute is in every tier, the layout has no mark.
    FrameLayout.objects.filter(pk=layout.pk).update(coarse_until=None)
    write(layout, util, np.full(len(KEYS), 2.0), t0 + 20)
    write(layout, util, np.full(len(KEYS), 2.0), t0 + 70)  # the next minute
    frames_rollups_close(now=t0 + 600)
    assert tier(util, HOUR)[datetime.fromtimestamp(t0, UTC)][0].tolist() == [3] * len(KEYS)
