"""Reads of the telemetry store: latest values, range reads at a sensible resolution, top-N,
and aggregation over the topology or tenants.

Range reads never scan long raw history: they choose the coarsest stored resolution that still
gives enough points and re-bucket it to about ``TARGET_POINTS`` points.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache

from django.db import connection
from django.db.models import Count, Sum

from telemetry.models import Entity, MetricDefinition, Rollup, Sample
from telemetry.read.local.frames import (
    entity_positions,
    fold_bucket,
    frame_buckets,
    frame_means,
)
from telemetry.read.steps import HOUR_SECONDS, hour_dividing_step
from telemetry.store.samples import watermarks

TARGET_POINTS = 600
MIN_POINTS = 300
STORED_RESOLUTIONS = (86400, 3600, 900, 60)  # coarsest first


@dataclass(frozen=True)
class SeriesPoint:
    ts: datetime
    mean: float
    min: float
    max: float
    count: int


@dataclass(frozen=True)
class Series:
    metric: str
    entity_key: str
    source: str  # "raw" or "rollup:<seconds>"
    step_seconds: int
    points: list[SeriesPoint]


@lru_cache(maxsize=16384)
def utc_at(seconds: int) -> datetime:
    """The UTC time ``seconds`` after the epoch, one shared object per plotted step: a page's
    curves share their time axis, and building a datetime per point of every curve was a
    tenth of a page's time (``datetime`` is immutable, so sharing is safe)."""
    return datetime.fromtimestamp(seconds, tz=UTC)


def choose_source(
    start: datetime, end: datetime, *, hour_aligned: bool = False
) -> tuple[str, int, int]:
    """Pick ``(source, stored_resolution, step)`` for a range.

    The step aims at ~600 points; the source is the coarsest stored resolution no coarser than
    that step, so a 30-day chart reads hourly rollups (720 points), a 7-day chart 15-minute
    rollups (672) and a 1-hour chart raw samples.

    ``hour_aligned``: the step divides the hour (and is at most one), so no bucket straddles an
    hour's edge — what per-hour figures need. Why: a 7 s step put the first sample of the next
    hour into this hour's last bucket (an hour of 61 observations), and a 30-day read's 2 h
    steps spread one hour's data over two (a phantom hour the ledger then billed).
    """
    span = max(1.0, (end - start).total_seconds())
    step = max(1, math.ceil(span / TARGET_POINTS))
    for resolution in STORED_RESOLUTIONS:
        if hour_aligned and resolution > HOUR_SECONDS:
            continue
        if span / resolution >= MIN_POINTS:
            # Whole stored buckets per step, so every plotted point covers equal time.
            step = math.ceil(step / resolution) * resolution
            if hour_aligned:
                step = hour_dividing_step(min(step, HOUR_SECONDS), resolution)
            return f"rollup:{resolution}", resolution, step
    if hour_aligned:
        step = hour_dividing_step(min(step, HOUR_SECONDS), 1)
    return "raw", 0, step


def series_read(
    *,
    metric: MetricDefinition,
    entity: Entity,
    start: datetime,
    end: datetime,
    hour_aligned: bool = False,
) -> Series:
    source, resolution, step = choose_source(start, end, hour_aligned=hour_aligned)
    if hour_aligned and resolution == 0:
        # One entity's raw samples at their own second. Why: a per-hour read's 8 s buckets
        # floored the data's last sample by up to 7 s, and the ledger's coverage (last sample
        # + one interval) then lost those seconds from a closed hour (3,596 of 3,600 s).
        step = 1
    buckets: dict[int, list[float]] = {}
    _fold_tiered(metric, entity, start, end, resolution, step, buckets, watermarks())
    # Dense sources (the twin's per-card data) live in frames; fold them into the same buckets.
    frame_buckets(
        metric=metric,
        entity=entity,
        start=start,
        end=end,
        resolution=resolution,
        step=step,
        buckets=buckets,
    )
    points = [
        SeriesPoint(
            ts=utc_at(key),
            mean=agg[1] / agg[0],
            min=agg[2],
            max=agg[3],
            count=int(agg[0]),
        )
        for key, agg in sorted(buckets.items())
    ]
    return Series(metric.name, entity.key, source, step, points)


# A tier without a watermark yet (the 15-minute one right after an upgrade) answers nothing,
# so the whole range falls through to the next finer one.
FINER = {86400: 3600, 3600: 900, 900: 60, 60: 0}

# On PostgreSQL the re-bucketing to the plotted step happens in the database, so a 7-day
# range ships ~600 grouped rows instead of 10,080 minute rollups.
_PG_RAW = """
SELECT floor(date_part('epoch', ts) / %s) * %s AS k, count(*), sum(value), min(value),
       max(value)
FROM monitoring_sample WHERE metric_id = %s AND entity_id = %s AND ts >= %s AND ts < %s
GROUP BY k
"""
_PG_ROLLUP = """
SELECT floor(date_part('epoch', bucket) / %s) * %s AS k, sum(count), sum(sum), min(min),
       max(max)
FROM monitoring_rollup
WHERE metric_id = %s AND entity_id = %s AND resolution = %s AND bucket >= %s AND bucket < %s
GROUP BY k
"""


def _fold_grouped(sql: str, params: list, buckets: dict) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        for key, count, total, low, high in cursor.fetchall():
            fold_bucket(buckets, int(key), int(count), total, low, high)


def _fold_tiered(
    metric: MetricDefinition,
    entity: Entity,
    start: datetime,
    end: datetime,
    resolution: int,
    step: int,
    buckets: dict,
    marks: dict[int, datetime],
) -> None:
    """Rollups up to their watermark, then the next finer source for the rest of the range.

    Compaction lags real time (a bucket is built once it has closed), so the newest part of
    any range comes from finer rollups or raw samples instead of being left out.
    """
    if start >= end:
        return
    if resolution == 0:
        if connection.vendor == "postgresql":
            _fold_grouped(_PG_RAW, [step, step, metric.pk, entity.pk, start, end], buckets)
            return
        rows = Sample.objects.filter(metric=metric, entity=entity, ts__gte=start, ts__lt=end)
        for ts, value in rows.values_list("ts", "value").iterator():
            fold_bucket(buckets, int(ts.timestamp() // step * step), 1, value, value, value)
        return
    complete = marks.get(resolution)
    upto = min(end, complete) if complete else start
    if upto > start:
        if connection.vendor == "postgresql":
            params = [step, step, metric.pk, entity.pk, resolution, start, upto]
            _fold_grouped(_PG_ROLLUP, params, buckets)
        else:
            rows = Rollup.objects.filter(
                metric=metric,
                entity=entity,
                resolution=resolution,
                bucket__gte=start,
                bucket__lt=upto,
            )
            for bucket, count, total, low, high in rows.values_list(
                "bucket", "count", "sum", "min", "max"
            ).iterator():
                key = int(bucket.timestamp() // step * step)
                fold_bucket(buckets, key, count, total, low, high)
    _fold_tiered(metric, entity, max(start, upto), end, FINER[resolution], step, buckets, marks)


def series_read_many(
    *, metrics: list[MetricDefinition], entity: Entity, start: datetime, end: datetime
) -> dict[str, Series]:
    """Several metrics of one entity over one range: the same tiers as :func:`series_read`,
    but one grouped query per tier for all of them (PostgreSQL), so a page of curves costs
    a few queries however many it draws."""
    if connection.vendor != "postgresql":
        return {m.name: series_read(metric=m, entity=entity, start=start, end=end) for m in metrics}
    source, step, buckets = _buckets_many(metrics, entity, start, end)
    return {
        metric.name: Series(
            metric.name,
            entity.key,
            source,
            step,
            [
                SeriesPoint(
                    ts=utc_at(key), mean=agg[1] / agg[0], min=agg[2], max=agg[3], count=int(agg[0])
                )
                for key, agg in sorted(buckets[metric.pk].items())
            ],
        )
        for metric in metrics
    }


def series_means_many(
    *, metrics: list[MetricDefinition], entity: Entity, start: datetime, end: datetime
) -> dict[str, list[tuple[datetime, float]]]:
    """``{metric name: [(time, mean), …]}``: what :func:`series_read_many` gives, without the
    min/max/count a chart does not draw (the dashboards' curves)."""
    if connection.vendor != "postgresql":
        return {
            name: [(p.ts, p.mean) for p in series.points]
            for name, series in series_read_many(
                metrics=metrics, entity=entity, start=start, end=end
            ).items()
        }
    _, _, buckets = _buckets_many(metrics, entity, start, end)
    return {
        metric.name: [
            (utc_at(key), agg[1] / agg[0]) for key, agg in sorted(buckets[metric.pk].items())
        ]
        for metric in metrics
    }


def _buckets_many(
    metrics: list[MetricDefinition], entity: Entity, start: datetime, end: datetime
) -> tuple[str, int, dict[int, dict[int, list[float]]]]:
    """``(source, step, {metric id: {bucket start: [count, sum, min, max]}})`` (PostgreSQL)."""
    source, resolution, step = choose_source(start, end)
    buckets: dict[int, dict[int, list[float]]] = {m.pk: {} for m in metrics}
    fold_grouped_tiers(
        (_PG_RAW_MANY, _PG_ROLLUP_MANY),
        ([m.pk for m in metrics], entity.pk),
        start,
        end,
        resolution,
        step,
        buckets,
        watermarks(),
    )
    positions = entity_positions(entity)
    if positions:
        for metric in metrics:
            frame_buckets(
                metric=metric,
                entity=entity,
                start=start,
                end=end,
                resolution=resolution,
                step=step,
                buckets=buckets[metric.pk],
                positions=positions,
            )
    return source, step, buckets


_PG_RAW_MANY = """
SELECT metric_id, floor(date_part('epoch', ts) / %s) * %s AS k, count(*), sum(value),
       min(value), max(value)
FROM monitoring_sample
WHERE metric_id = ANY(%s) AND entity_id = %s AND ts >= %s AND ts < %s
GROUP BY metric_id, k
"""
_PG_ROLLUP_MANY = """
SELECT metric_id, floor(date_part('epoch', bucket) / %s) * %s AS k, sum(count), sum(sum),
       min(min), max(max)
FROM monitoring_rollup
WHERE metric_id = ANY(%s) AND entity_id = %s AND resolution = %s AND bucket >= %s
      AND bucket < %s
GROUP BY metric_id, k
"""


def fold_grouped_tiers(
    queries: tuple[str, str],
    selects: tuple[object, object],
    start: datetime,
    end: datetime,
    resolution: int,
    step: int,
    buckets: dict[int, dict],
    marks: dict[int, datetime],
) -> None:
    """The tier walk of :func:`_fold_tiered` for a grouped read (PostgreSQL): ``queries`` are
    the raw and rollup statements, each grouping by one key column (a metric id, or an entity
    id) and the bucket; ``selects`` their metric and entity parameters (one of them a list);
    each row is folded into ``buckets[key]``."""
    if start >= end:
        return
    raw, rollup = queries
    if resolution == 0:
        sql, params, upto = raw, [step, step, *selects, start, end], end
    else:
        complete = marks.get(resolution)
        upto = min(end, complete) if complete else start
        sql, params = rollup, [step, step, *selects, resolution, start, upto]
    if upto > start:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            for key_id, key, count, total, low, high in cursor.fetchall():
                fold_bucket(buckets[key_id], int(key), int(count), total, low, high)
    if resolution:
        fold_grouped_tiers(
            queries, selects, max(start, upto), end, FINER[resolution], step, buckets, marks
        )


def top_entities(
    *, metric: MetricDefinition, cluster_id: int, since: datetime, limit: int = 10
) -> list[tuple[str, float]]:
    """Entities with the highest mean of ``metric`` since ``since`` (minute rollups)."""
    means = _entity_means(metric=metric, cluster_id=cluster_id, since=since)
    ranked = sorted(means.items(), key=lambda item: -item[1])[:limit]
    keys = dict(Entity.objects.filter(pk__in=[e for e, _ in ranked]).values_list("pk", "key"))
    return [(keys[entity_id], mean) for entity_id, mean in ranked]


def _entity_means(
    *, metric: MetricDefinition, cluster_id: int, since: datetime
) -> dict[int, float]:
    """Mean per entity since ``since``: minute rollups up to their watermark, raw samples after
    it, and frames, alike."""
    sums: dict[int, list[float]] = {}
    complete = watermarks().get(60)
    raw_from = max(since, complete) if complete else since
    if complete and complete > since:
        rows = (
            Rollup.objects.filter(
                metric=metric,
                resolution=60,
                bucket__gte=since,
                bucket__lt=complete,
                entity__cluster_id=cluster_id,
            )
            .values("entity_id")
            .annotate(total=Sum("sum"), n=Sum("count"))
        )
        for row in rows:
            sums[row["entity_id"]] = [row["total"], row["n"]]
    raw = (
        Sample.objects.filter(metric=metric, ts__gte=raw_from, entity__cluster_id=cluster_id)
        .values("entity_id")
        .annotate(total=Sum("value"), n=Count("id"))
    )
    for row in raw:
        agg = sums.setdefault(row["entity_id"], [0.0, 0])
        agg[0] += row["total"]
        agg[1] += row["n"]
    for entity_id, (total, count) in frame_means(
        metric=metric, cluster_id=cluster_id, since=since
    ).items():
        agg = sums.setdefault(entity_id, [0.0, 0])
        agg[0] += total
        agg[1] += count
    return {entity_id: total / n for entity_id, (total, n) in sums.items() if n}


def aggregate_by(
    *, metric: MetricDefinition, cluster_id: int, since: datetime, group: str
) -> dict[str, float]:
    """Mean of ``metric`` per rack, supernode, cluster or tenant since ``since``."""
    field = {
        "rack": "rack__name",
        "supernode": "supernode__name",
        "cluster": "cluster__name",
        "tenant": "tenant__slug",
    }[group]
    means = _entity_means(metric=metric, cluster_id=cluster_id, since=since)
    groups = dict(
        Entity.objects.filter(pk__in=list(means), **{f"{field}__isnull": False}).values_list(
            "pk", field
        )
    )
    totals: dict[str, list[float]] = {}
    for entity_id, mean in means.items():
        if entity_id in groups:
            agg = totals.setdefault(groups[entity_id], [0.0, 0])
            agg[0] += mean
            agg[1] += 1
    # Mean of entity means: each card counts once however many samples it reported.
    return {name: total / n for name, (total, n) in totals.items()}
