"""Window statistics over stored telemetry: what the cost page and the validation report cite.

Every figure carries its source: the metric, the window and how many stored values it
averages, so a page can show "mean of N samples" or say honestly that there is no data.
Cluster scalars (``cluster_*``) are read as one series (:func:`series_read`, which merges raw
samples, rollups and frames); per-workload figures come from minute rollups (samples and
frames alike), raw samples after the compaction watermark.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
from django.db.models import Count, Max, Min, Q, Sum

from cluster_portal.web.caching import shared_read
from cluster_portal.web.rows import plain_rows
from inventory.models import Cluster
from telemetry.models import (
    Entity,
    EntityKind,
    Frame,
    FrameLayout,
    MetricDefinition,
    Rollup,
    Sample,
)
from telemetry.read.local.frames import fold_bucket, stacked
from telemetry.read.local.series import Series, series_read
from telemetry.store.frames import COUNT_DTYPE, SUM_DTYPE, layout_entity_ids
from telemetry.store.samples import watermarks

CLUSTER_KEY = "cluster"  # the twin and exporters store cluster scalars under this key


@dataclass(frozen=True)
class WindowStat:
    """Mean of the stored values of one metric over a window, with how many there were."""

    metric: str
    start: datetime
    end: datetime
    mean: float
    count: int
    low: float
    high: float


def cluster_entity(cluster: Cluster) -> Entity | None:
    return Entity.objects.filter(cluster=cluster, kind=EntityKind.CLUSTER, key=CLUSTER_KEY).first()


def cluster_series(
    cluster: Cluster,
    metric_name: str,
    start: datetime,
    end: datetime,
    *,
    hour_aligned: bool = False,
) -> Series | None:
    """The cluster scalar's series over the window; ``None`` if metric or entity is unknown.
    ``hour_aligned``: a step that divides the hour (``choose_source``)."""
    metric = MetricDefinition.objects.filter(name=metric_name).first()
    entity = cluster_entity(cluster)
    if metric is None or entity is None:
        return None
    return series_read(
        metric=metric, entity=entity, start=start, end=end, hour_aligned=hour_aligned
    )


def stat_of_series(series: Series | None, start: datetime, end: datetime) -> WindowStat | None:
    """Count-weighted mean of a series' points; ``None`` when it holds no values."""
    if series is None:
        return None
    count = sum(p.count for p in series.points)
    if not count:
        return None
    total = sum(p.mean * p.count for p in series.points)
    return WindowStat(
        metric=series.metric,
        start=start,
        end=end,
        mean=total / count,
        count=count,
        low=min(p.min for p in series.points),
        high=max(p.max for p in series.points),
    )


def cluster_stat(
    cluster: Cluster, metric_name: str, start: datetime, end: datetime
) -> WindowStat | None:
    return cluster_stats(cluster, [metric_name], start, end).get(metric_name)


def cluster_stats(
    cluster: Cluster, metric_names: list[str], start: datetime, end: datetime
) -> dict[str, WindowStat | None]:
    """Window statistics of several cluster scalars at once, in a handful of grouped queries.

    Same tiers as a range read — hourly rollups up to their watermark for windows of two days
    or more (15-minute ones from six hours), then finer rollups, then raw samples after the
    compaction watermark — but summed per metric in the database instead of returned as a series.
    """
    metrics = dict(MetricDefinition.objects.filter(name__in=metric_names).values_list("pk", "name"))
    entity = cluster_entity(cluster)
    found: dict[str, list[float]] = {}
    if metrics and entity is not None:
        marks = watermarks()
        span = (end - start).total_seconds()
        resolution = 3600 if span >= 2 * 86400 else 900 if span >= 6 * 3600 else 60
        _tier_sums(entity.pk, list(metrics), start, end, resolution, marks, metrics, found)
    stats: dict[str, WindowStat | None] = {}
    for name in metric_names:
        agg = found.get(name)
        stats[name] = (
            WindowStat(name, start, end, agg[1] / agg[0], int(agg[0]), agg[2], agg[3])
            if agg and agg[0]
            else None
        )
    return stats


_FINER = {3600: 900, 900: 60, 60: 0}


def _tier_plan(
    start: datetime, end: datetime, resolution: int, marks: dict
) -> list[tuple[int, datetime, datetime]]:
    """``(resolution, from, to)`` spans covering the window: rollups of ``resolution`` up to
    their watermark, then the next finer tier for the rest, raw samples last."""
    plan: list[tuple[int, datetime, datetime]] = []
    while start < end:
        if resolution == 0:
            plan.append((0, start, end))
            break
        complete = marks.get(resolution)
        upto = min(end, complete) if complete else start
        if upto > start:
            plan.append((resolution, start, upto))
        start, resolution = max(start, upto), _FINER[resolution]
    return plan


def _tier_sums(
    entity_id: int,
    metric_ids: list[int],
    start: datetime,
    end: datetime,
    resolution: int,
    marks: dict,
    names: dict[int, str],
    found: dict[str, list[float]],
) -> None:
    """``found[name] = [count, sum, min, max]`` over the window's tiers, in one query (one
    ``UNION ALL`` branch per tier) instead of one round trip per tier."""
    parts = []
    for tier, lo, hi in _tier_plan(start, end, resolution, marks):
        if tier == 0:
            parts.append(
                Sample.objects.filter(
                    entity_id=entity_id, metric_id__in=metric_ids, ts__gte=lo, ts__lt=hi
                )
                .order_by()
                .values("metric_id")
                .annotate(n=Count("id"), total=Sum("value"), low=Min("value"), high=Max("value"))
                .values_list("metric_id", "n", "total", "low", "high")
            )
        else:
            parts.append(
                Rollup.objects.filter(
                    entity_id=entity_id,
                    metric_id__in=metric_ids,
                    resolution=tier,
                    bucket__gte=lo,
                    bucket__lt=hi,
                )
                .order_by()
                .values("metric_id")
                .annotate(n=Sum("count"), total=Sum("sum"), low=Min("min"), high=Max("max"))
                .values_list("metric_id", "n", "total", "low", "high")
            )
    if not parts:
        return
    rows = parts[0].union(*parts[1:], all=True) if len(parts) > 1 else parts[0]
    for metric_id, n, total, low, high in rows:
        fold_bucket(found, names[metric_id], n, total, low, high)


def entity_sums(
    *, cluster: Cluster, metric_name: str, kind: str, start: datetime, end: datetime
) -> dict[int, tuple[float, int]]:
    """``{entity_id: (sum, count)}`` of ``metric`` for entities of ``kind`` in the window.

    The frames' part is shared for ``DASHBOARD_CACHE_SECONDS`` by windows that read the same
    frames (see :func:`_frame_window_sums`); rollups and raw samples are read for the exact
    window."""
    metric = MetricDefinition.objects.filter(name=metric_name).first()
    if metric is None:
        return {}
    # (entity ids, sums, counts) arrays from each source, added up per entity at the end.
    ids: list[np.ndarray] = []
    totals: list[np.ndarray] = []
    counts: list[np.ndarray] = []

    def rows_in(found) -> None:
        rows = list(found)
        if rows:
            ids.append(np.array([r[0] for r in rows], np.int64))
            totals.append(np.array([r[1] for r in rows], np.float64))
            counts.append(np.array([r[2] for r in rows], np.int64))

    entity_filter = {"entity__cluster": cluster, "entity__kind": kind}
    complete = watermarks().get(60)
    raw_from = start
    if complete and complete > start:
        upto = min(complete, end)
        rows_in(
            Rollup.objects.filter(
                metric=metric, resolution=60, bucket__gte=start, bucket__lt=upto, **entity_filter
            )
            .order_by()
            .values("entity_id")
            .annotate(total=Sum("sum"), n=Sum("count"))
            .values_list("entity_id", "total", "n")
        )
        raw_from = max(start, upto)
    if raw_from < end:
        rows_in(
            Sample.objects.filter(metric=metric, ts__gte=raw_from, ts__lt=end, **entity_filter)
            .order_by()
            .values("entity_id")
            .annotate(total=Sum("value"), n=Count("id"))
            .values_list("entity_id", "total", "n")
        )
    # Frames keep their own rollups, merged as they are written: no watermark needed.
    layouts = {
        layout.pk: layout for layout in FrameLayout.objects.filter(cluster=cluster, kind=kind)
    }
    for layout_id, count, total in _frame_window_sums(metric, layouts, start, end):
        ids.append(np.asarray(layout_entity_ids(layouts[layout_id]), np.int64))
        totals.append(total.astype(np.float64))
        counts.append(count.astype(np.int64))
    if not ids:
        return {}
    every, total, count = np.concatenate(ids), np.concatenate(totals), np.concatenate(counts)
    if len(ids) > 1:  # one entity may be in several sources: add them up
        every, where = np.unique(every, return_inverse=True)
        total = np.bincount(where, weights=total, minlength=every.size)
        count = np.bincount(where, weights=count, minlength=every.size).astype(np.int64)
    has = count > 0
    return dict(
        zip(
            every[has].tolist(),
            zip(total[has].tolist(), count[has].tolist(), strict=True),
            strict=True,
        )
    )


DAY, HOUR, MINUTE = 86400, 3600, 60


def _frame_window_sums(
    metric: MetricDefinition, layouts: dict[int, FrameLayout], start: datetime, end: datetime
):
    """``(layout id, per-entity counts, per-entity sums)`` of a metric's frames in the window.

    Windows of six hours or more read hourly frames (hour-aligned: the first partial hour
    counts whole), so a month is 720 frames instead of 43,200 — and minute frames are only
    kept two days anyway. Whole days inside the window are read from daily frames where every
    one of them is there (30 frames for a month instead of 720: ~20 MB fewer bytes per
    10,240-card cluster); a layout missing any such day reads hourly frames throughout.
    Two queries (daily, then the rest); each layout's rows summed as one array.
    Returns a list of those triples (shared, see below).
    """
    resolution = HOUR if (end - start).total_seconds() >= 6 * HOUR else MINUTE
    frame_start = start.timestamp() // resolution * resolution
    # Rollup frames sit on whole multiples of their resolution, so "before ``end``" is
    # "before ``end`` rounded up": windows that differ inside one bucket read the same frames
    # and share the result for the cache's few seconds (custom ranges in the time picker).
    frame_end = -(-end.timestamp() // resolution) * resolution
    day_hi = end.timestamp() // DAY * DAY
    return shared_read(
        "frame-window-sums",
        (metric.pk, tuple(sorted(layouts)), resolution, frame_start, frame_end, day_hi),
        lambda: list(
            _frame_sums(
                metric,
                layouts,
                resolution,
                *(datetime.fromtimestamp(t, tz=UTC) for t in (frame_start, frame_end, day_hi)),
            )
        ),
    )


def _frame_sums(
    metric: MetricDefinition,
    layouts: dict[int, FrameLayout],
    resolution: int,
    frame_start: datetime,
    end: datetime,
    day_end: datetime,
):
    """:func:`_frame_window_sums` for aligned bounds: frames in ``[frame_start, end)``, whole
    days before ``day_end`` from daily frames."""
    day_lo = -(-frame_start.timestamp() // DAY) * DAY
    day_hi = day_end.timestamp()
    daily: dict[int, list[tuple]] = {}
    if resolution == HOUR and day_hi - day_lo >= DAY:
        lo, hi = (datetime.fromtimestamp(t, tz=UTC) for t in (day_lo, day_hi))
        rows = plain_rows(
            Frame.objects.filter(
                metric=metric, layout_id__in=list(layouts), resolution=DAY, ts__gte=lo, ts__lt=hi
            )
            .order_by()
            .values_list("layout_id", "count", "sum")
        )
        for layout_id, c, t in rows:
            daily.setdefault(layout_id, []).append((bytes(c), bytes(t)))
        days = round((day_hi - day_lo) / DAY)
        daily = {k: rows for k, rows in daily.items() if len(rows) == days}
    finer = Q()
    for layout_id in layouts:
        if layout_id in daily:
            finer |= Q(layout_id=layout_id, ts__gte=frame_start, ts__lt=lo)
            finer |= Q(layout_id=layout_id, ts__gte=hi, ts__lt=end)
        else:
            finer |= Q(layout_id=layout_id, ts__gte=frame_start, ts__lt=end)
    grouped: dict[int, list[tuple]] = {k: list(rows) for k, rows in daily.items()}
    if layouts:
        rows = plain_rows(
            Frame.objects.filter(finer, metric=metric, resolution=resolution)
            .order_by()
            .values_list("layout_id", "count", "sum")
        )
        for layout_id, c, t in rows:
            grouped.setdefault(layout_id, []).append((bytes(c), bytes(t)))
    for layout_id, chunks in grouped.items():
        size = layouts[layout_id].size
        count = stacked([c for c, _ in chunks], COUNT_DTYPE, size).sum(axis=0, dtype=np.int64)
        total = stacked([t for _, t in chunks], SUM_DTYPE, size).sum(axis=0)
        yield layout_id, count, total


def data_span(cluster: Cluster, start: datetime, end: datetime) -> tuple[datetime, datetime] | None:
    """First and last raw sample time of the cluster's scalars in the window (for captions)."""
    entity = cluster_entity(cluster)
    if entity is None:
        return None
    span = Sample.objects.filter(entity=entity, ts__gte=start, ts__lt=end).aggregate(
        first=Min("ts"), last=Max("ts")
    )
    return (span["first"], span["last"]) if span["first"] else None
