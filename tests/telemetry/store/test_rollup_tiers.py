"""The 15-minute tier: built for both shapes of the store, picked by range reads, and ranges
stay readable on a store whose history predates it (reads fall back to other tiers)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from django.db import transaction

from cluster_portal.web.timerange import TimeRange
from telemetry.models import Entity, Frame, MetricDefinition, Rollup, RollupWatermark
from telemetry.read import kind_series, series_read
from telemetry.read.local.series import choose_source
from telemetry.receivers.twin import layout_for_keys
from telemetry.store.compaction import rollups_compact
from telemetry.store.frame_close import frames_rollups_close
from telemetry.store.frame_codec import frame_array
from telemetry.store.frames import (
    COUNT_DTYPE,
    SUM_DTYPE,
    entity_means_sum,
    frames_write,
    frames_write_many,
)
from telemetry.store.samples import samples_write

KEYS = [f"n0/c{c}" for c in range(4)]
DAY = 86400


def at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def close_minutes() -> None:
    """Compaction after every written minute has closed: the coarse tiers are complete."""
    frames_rollups_close(now=time.time() + 3600)


@pytest.fixture
def util():
    return MetricDefinition.objects.get(name="accelerator_utilization_ratio")


@pytest.fixture
def layout(cluster):
    for key in KEYS:
        Entity.objects.create(cluster=cluster, kind="accelerator", key=key)
    return layout_for_keys(cluster, "accelerator", KEYS)


def test_ranges_pick_the_coarsest_tier_with_a_few_hundred_points():
    end = at(1_780_000_000)
    assert choose_source(end - timedelta(days=7), end)[:2] == ("rollup:900", 900)
    assert choose_source(end - timedelta(days=30), end)[:2] == ("rollup:3600", 3600)
    assert choose_source(end - timedelta(hours=24), end)[:2] == ("rollup:60", 60)
    assert choose_source(end - timedelta(hours=1), end)[:2] == ("raw", 0)


@pytest.mark.parametrize("minutes", (10, 50, 70, 90, 24 * 60, 7 * 1440, 30 * 1440, 400 * 1440))
def test_an_hour_aligned_read_never_has_a_step_that_straddles_an_hour(minutes):
    end = at(1_780_000_000)
    source, resolution, step = choose_source(
        end - timedelta(minutes=minutes), end, hour_aligned=True
    )
    assert 3600 % step == 0, (source, step)
    assert resolution <= 3600 and step % max(resolution, 1) == 0, (source, step)
    plain = choose_source(end - timedelta(minutes=minutes), end)[2]
    assert step >= min(plain, 3600)  # never finer than the plain read asks, up to the hour


@pytest.mark.django_db
def test_compaction_builds_the_15_minute_tier_and_seven_days_read_it(cluster, util):
    entity = Entity.objects.create(cluster=cluster, kind="cluster", key="cluster")
    now = time.time() // 3600 * 3600
    rows = [(util.pk, entity.pk, now - 2 * DAY + 60 * i, 0.5) for i in range(2 * 1440)]
    with transaction.atomic():
        samples_write(rows)
    rollups_compact(now=now + 600)
    quarter = Rollup.objects.filter(resolution=900, entity=entity)
    assert quarter.count() == 2 * 96
    assert {r.count for r in quarter} == {15}
    series = series_read(metric=util, entity=entity, start=at(now - 7 * DAY), end=at(now))
    assert series.source == "rollup:900"
    assert sum(p.count for p in series.points) == len(rows)
    assert all(p.mean == pytest.approx(0.5) for p in series.points)


@pytest.mark.django_db
def test_rows_from_before_the_tier_are_read_from_minute_rollups(cluster, util):
    entity = Entity.objects.create(cluster=cluster, kind="cluster", key="cluster")
    now = time.time() // 3600 * 3600
    rows = [(util.pk, entity.pk, now - DAY + 60 * i, 1.0) for i in range(1440)]
    with transaction.atomic():
        samples_write(rows)
    rollups_compact(now=now + 600)
    # An upgraded store: minute rollups and their watermark, no 15-minute tier yet.
    Rollup.objects.filter(resolution=900).delete()
    RollupWatermark.objects.filter(resolution=900).delete()
    series = series_read(metric=util, entity=entity, start=at(now - 7 * DAY), end=at(now))
    assert sum(p.count for p in series.points) == len(rows)


@pytest.mark.django_db
def test_frames_keep_a_15_minute_rollup(layout, util):
    t0 = 1_780_000_200 // 900 * 900
    with transaction.atomic():
        for i in range(3):
            frames_write(layout=layout, values={util.pk: np.full(4, 0.5)}, ts=t0 + 300 * i)
    close_minutes()
    quarter = Frame.objects.get(layout=layout, resolution=900)
    assert frame_array(quarter.count, COUNT_DTYPE).tolist() == [3, 3, 3, 3]


@pytest.mark.django_db
def test_kind_series_reads_older_history_from_other_tiers(cluster, layout, util):
    """Hourly frames for the whole week, 15-minute frames only for the last day (as after an
    upgrade): the 7-day series covers the whole week, and no bucket is counted twice."""
    now = time.time() // 3600 * 3600
    with transaction.atomic():
        for h in range(7 * 24):
            frames_write(layout=layout, values={util.pk: np.full(4, 0.25)}, ts=now - 3600 * (h + 1))
    close_minutes()
    Frame.objects.filter(resolution__in=(0, 60, 900), ts__lt=at(now - DAY)).delete()
    tr = TimeRange(start=at(now - 7 * DAY), end=at(now), preset="7d")
    points = kind_series(cluster_id=cluster.pk, kind="accelerator", metric=util, tr=tr)
    assert points[0][0] <= at(now - 7 * DAY + 3600)
    assert points[-1][0] >= at(now - 3600)
    assert all(value == pytest.approx(1.0) for _, value in points)  # 4 cards × 0.25, once


@pytest.mark.django_db
def test_raw_frames_can_be_thinned_while_rollups_keep_every_step(layout, util, settings):
    settings.TELEMETRY_RAW_FRAME_SECONDS = 10
    t0 = 1_780_000_000
    batches = [(t0 + i, {util.pk: np.full(4, float(i))}) for i in range(10)]  # one 10 s tick
    with transaction.atomic():
        frames_write_many(layout=layout, batches=batches)
    assert Frame.objects.filter(layout=layout, resolution=0).count() == 1
    minute = Frame.objects.get(layout=layout, resolution=60)
    assert frame_array(minute.count, COUNT_DTYPE).tolist() == [10] * 4
    with transaction.atomic():  # a replayed tick changes nothing
        assert frames_write_many(layout=layout, batches=batches) == 0
    minute = Frame.objects.get(layout=layout, resolution=60)
    assert frame_array(minute.count, COUNT_DTYPE).tolist() == [10] * 4


@pytest.mark.django_db
def test_kind_series_reads_stored_reductions_and_older_frames_alike(cluster, layout, util):
    now = time.time() // 60 * 60
    with transaction.atomic():
        for m in range(30):
            values = np.array([0.1, 0.2, np.nan, 0.4]) * (1 + m / 30)
            frames_write(layout=layout, values={util.pk: values}, ts=now - 60 * (m + 1))
    for period, hours in (("1h", 1), ("6h", 6)):
        tr = TimeRange(start=at(now - 3600 * hours), end=at(now), preset=period)
        for reduce in ("sum", "mean"):
            stored = kind_series(
                cluster_id=cluster.pk, kind="accelerator", metric=util, tr=tr, reduce=reduce
            )
            # Frames from before the reductions were kept: read from the arrays instead.
            Frame.objects.update(entities_sum=None, entities_count=None)
            arrays = kind_series(
                cluster_id=cluster.pk, kind="accelerator", metric=util, tr=tr, reduce=reduce
            )
            assert stored and [t for t, _ in stored] == [t for t, _ in arrays]
            assert [v for _, v in stored] == pytest.approx([v for _, v in arrays], rel=1e-5)
            with transaction.atomic():  # restore the reductions for the next round
                for frame in Frame.objects.exclude(resolution=0):
                    count = frame_array(frame.count, COUNT_DTYPE)
                    total = frame_array(frame.sum, SUM_DTYPE)
                    frame.entities_sum, frame.entities_count = entity_means_sum(count, total)
                    frame.save()
                for frame in Frame.objects.filter(resolution=0):
                    v = frame_array(frame.values, np.float32)
                    frame.entities_sum = float(np.nansum(v, dtype=np.float64))
                    frame.entities_count = int((~np.isnan(v)).sum())
                    frame.save()


@pytest.mark.django_db
def test_older_frames_get_their_reduction_backfilled(layout, util):
    from telemetry.store.frame_reductions import frames_backfill_reductions

    with transaction.atomic():
        frames_write(layout=layout, values={util.pk: np.array([1.0, 2.0, np.nan, 4.0])}, ts=1e9)
    close_minutes()
    expected = sorted(Frame.objects.values_list("resolution", "entities_sum", "entities_count"))
    Frame.objects.update(entities_sum=None, entities_count=None)
    assert frames_backfill_reductions(batch=2) == 5
    assert sorted(Frame.objects.values_list("resolution", "entities_sum", "entities_count")) == (
        expected
    )
    assert expected[0] == (0, 7.0, 3)


@pytest.mark.django_db
def test_month_windows_sum_whole_days_from_daily_frames_and_the_edges_from_hourly(
    cluster, layout, util
):
    from telemetry.read import entity_sums

    # Three days and a bit of hourly writes, one value per entity per write.
    t0 = 1_780_012_800 - 5 * 3600  # 19:00 the day before a midnight
    values = np.array([0.1, 0.2, 0.3, 0.4])
    with transaction.atomic():
        frames_write_many(
            layout=layout,
            batches=[(t0 + i * 3600, {util.id: values * (1 + i % 5)}) for i in range(80)],
        )
    close_minutes()
    start, end = at(t0 + 1800), at(t0 + 80 * 3600)
    expected_count = 80  # the first partial hour counts whole (hour-aligned windows)
    expected_sum = sum(values * (1 + i % 5) for i in range(80))
    sums = entity_sums(
        cluster=cluster, metric_name=util.name, kind="accelerator", start=start, end=end
    )
    ids = [Entity.objects.get(key=key).pk for key in KEYS]
    assert [sums[i][1] for i in ids] == [expected_count] * 4
    assert np.allclose([sums[i][0] for i in ids], expected_sum)
    # Whole days come from daily frames: without a day's hourly frames the sums are the same.
    midnight = 1_780_012_800
    Frame.objects.filter(
        resolution=3600, metric=util, ts__gte=at(midnight), ts__lt=at(midnight + DAY)
    ).delete()
    again = entity_sums(
        cluster=cluster, metric_name=util.name, kind="accelerator", start=start, end=end
    )
    assert again == sums
    # A layout missing a daily frame reads hourly frames throughout (here: 24 fewer hours).
    Frame.objects.filter(resolution=DAY, metric=util, ts=at(midnight + DAY)).delete()
    fallback = entity_sums(
        cluster=cluster, metric_name=util.name, kind="accelerator", start=start, end=end
    )
    assert [fallback[i][1] for i in ids] == [expected_count - 24] * 4


@pytest.mark.django_db
def test_windows_reading_the_same_frames_share_one_read_and_others_do_not(
    cluster, layout, util, dashboard_cache
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from telemetry.read import entity_sums

    t0 = 1_780_012_800 - 5 * 3600
    with transaction.atomic():
        frames_write_many(
            layout=layout,
            batches=[(t0 + i * 3600, {util.id: np.full(4, 1.0 + i)}) for i in range(30)],
        )
    close_minutes()

    def sums(start: int, end: int) -> dict:
        return entity_sums(
            cluster=cluster,
            metric_name=util.name,
            kind="accelerator",
            start=at(start),
            end=at(end),
        )

    first = sums(t0 + 60, t0 + 20 * 3600 - 60)
    # Inside the same hourly buckets at both ends: the same frames, read once.
    with CaptureQueriesContext(connection) as queries:
        assert sums(t0 + 1200, t0 + 20 * 3600 - 1) == first
    assert not [q for q in queries.captured_queries if 'FROM "monitoring_frame"' in q["sql"]]
    # One more hour at the end is another read, with one more hour in it.
    longer = sums(t0 + 60, t0 + 21 * 3600 - 60)
    assert {n for _, n in longer.values()} == {21}
    assert {n for _, n in first.values()} == {20}


@pytest.mark.django_db
def test_several_kind_curves_read_together_equal_each_read_alone(cluster, layout):
    from telemetry.read import kind_series_many

    util = MetricDefinition.objects.get(name="accelerator_utilization_ratio")
    power = MetricDefinition.objects.get(name="accelerator_power_watts")
    now = time.time() // 60 * 60
    with transaction.atomic():
        for m in range(90):
            scale = 1 + m / 30
            frames_write(
                layout=layout,
                values={
                    util.pk: np.array([0.1, 0.2, np.nan, 0.4]) * scale,
                    power.pk: np.array([300.0, np.nan, 310.0, 320.0]) * scale,
                },
                ts=now - 60 * (m + 1),
            )
    wanted = {util.name: "mean", power.name: "sum"}
    for period, hours in (("1h", 1), ("6h", 6), ("7d", 168)):
        tr = TimeRange(start=at(now - 3600 * hours), end=at(now), preset=period)
        together = kind_series_many(
            cluster_id=cluster.pk, kind="accelerator", metrics=wanted, tr=tr
        )
        for metric, reduce in ((util, "mean"), (power, "sum")):
            alone = kind_series(
                cluster_id=cluster.pk, kind="accelerator", metric=metric, tr=tr, reduce=reduce
            )
            assert alone, (period, metric.name)
            assert [t for t, _ in together[metric.name]] == [t for t, _ in alone]
            assert [v for _, v in together[metric.name]] == pytest.approx(
                [v for _, v in alone], rel=1e-9
            )
    # A metric with frames from before reductions were stored is read on its own, alike.
    Frame.objects.filter(metric=power).update(entities_sum=None, entities_count=None)
    tr = TimeRange(start=at(now - 6 * 3600), end=at(now), preset="6h")
    together = kind_series_many(cluster_id=cluster.pk, kind="accelerator", metrics=wanted, tr=tr)
    alone = kind_series(cluster_id=cluster.pk, kind="accelerator", metric=power, tr=tr)
    assert [v for _, v in together[power.name]] == pytest.approx([v for _, v in alone], rel=1e-5)
    assert kind_series_many(
        cluster_id=cluster.pk, kind="accelerator", metrics={"no_such_metric": "sum"}, tr=tr
    ) == {"no_such_metric": []}
