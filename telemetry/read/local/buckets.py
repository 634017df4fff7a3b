"""Per-hour, per-entity sums of one metric over a window: what an allocation ledger bills.

:func:`entity_sums` (``windows``) adds a window up per entity; a ledger also needs *when*,
so that idle capacity can be shown by hour and an over-committed hour is capped on its own.
Same sources as there — minute rollups up to the compaction watermark, raw samples after
it, and the frames' own rollups — grouped by hour instead of summed over the window.

Frames are read at minute resolution for windows under six hours and at hourly resolution
otherwise; hourly frames sit on whole hours, so callers align the window's start to the
hour (:func:`ledger_start`) and every source answers for the same span.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
from django.db.models import Count, Sum
from django.db.models.functions import TruncHour

from cluster_portal.web.rows import plain_rows
from inventory.models import Cluster
from telemetry.models import Frame, FrameLayout, MetricDefinition, Rollup, Sample
from telemetry.read.local.frames import stacked
from telemetry.store.frames import COUNT_DTYPE, SUM_DTYPE, layout_entity_ids
from telemetry.store.samples import watermarks

HOUR, MINUTE = 3600, 60
HOURLY_FRAMES_FROM = 6 * HOUR  # windows this long read hourly frames (as entity_sums does)


@dataclass(frozen=True)
class HourlySums:
    """``sums[h, e]`` and ``counts[h, e]``: the values of entity ``entity_ids[e]`` stored in the
    hour starting at ``hours[h]`` (epoch seconds, ascending)."""

    hours: np.ndarray
    entity_ids: np.ndarray
    sums: np.ndarray
    counts: np.ndarray


def ledger_start(start: datetime, end: datetime) -> datetime:
    """The start a per-hour read answers exactly: the hour for long windows (hourly frames
    cover whole hours), the minute otherwise."""
    step = HOUR if (end - start).total_seconds() >= HOURLY_FRAMES_FROM else MINUTE
    return datetime.fromtimestamp(start.timestamp() // step * step, tz=UTC)


def entity_hourly_sums(
    *, cluster: Cluster, metric_name: str, kind: str, start: datetime, end: datetime
) -> HourlySums:
    """Per-hour ``(sum, count)`` of ``metric`` for each entity of ``kind`` in ``[start, end)``."""
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    metric = MetricDefinition.objects.filter(name=metric_name).first()
    if metric is not None:
        _rows_into(parts, metric, cluster, kind, start, end)
        _frames_into(parts, metric, cluster, kind, start, end)
    if not parts:
        empty = np.zeros((0, 0))
        return HourlySums(np.zeros(0, np.int64), np.zeros(0, np.int64), empty, empty.astype(int))
    hour, entity, total, count = (np.concatenate(p) for p in zip(*parts, strict=True))
    hours, row = np.unique(hour, return_inverse=True)
    ids, col = np.unique(entity, return_inverse=True)
    sums = np.zeros((hours.size, ids.size), np.float64)
    counts = np.zeros((hours.size, ids.size), np.int64)
    np.add.at(sums, (row, col), total)
    np.add.at(counts, (row, col), count)
    return HourlySums(hours=hours, entity_ids=ids, sums=sums, counts=counts)


def _part(hours, entity_ids, totals, counts) -> tuple[np.ndarray, ...]:
    return (
        (np.asarray(hours, np.float64) // HOUR * HOUR).astype(np.int64),
        np.asarray(entity_ids, np.int64),
        np.nan_to_num(np.asarray(totals, np.float64)),
        np.asarray(counts, np.int64),
    )


def _rows_into(parts, metric, cluster, kind, start, end) -> None:
    """Minute rollups up to the watermark, raw samples after it, summed per hour in SQL."""
    where = {"metric": metric, "entity__cluster": cluster, "entity__kind": kind}
    complete = watermarks().get(MINUTE)
    raw_from = start
    queries = []
    if complete and complete > start:
        upto = min(complete, end)
        queries.append(
            Rollup.objects.filter(resolution=MINUTE, bucket__gte=start, bucket__lt=upto, **where)
            .annotate(hour=TruncHour("bucket", tzinfo=UTC))
            .order_by()
            .values("hour", "entity_id")
            .annotate(total=Sum("sum"), n=Sum("count"))
            .values_list("hour", "entity_id", "total", "n")
        )
        raw_from = max(start, upto)
    if raw_from < end:
        queries.append(
            Sample.objects.filter(ts__gte=raw_from, ts__lt=end, **where)
            .annotate(hour=TruncHour("ts", tzinfo=UTC))
            .order_by()
            .values("hour", "entity_id")
            .annotate(total=Sum("value"), n=Count("id"))
            .values_list("hour", "entity_id", "total", "n")
        )
    for query in queries:
        rows = list(query)
        if rows:
            parts.append(
                _part(
                    [r[0].timestamp() for r in rows],
                    [r[1] for r in rows],
                    [r[2] for r in rows],
                    [r[3] for r in rows],
                )
            )


def _frames_into(parts, metric, cluster, kind, start, end) -> None:
    """The frames' rollups (minute or hourly), each layout's frames of one hour summed."""
    layouts = {
        layout.pk: layout for layout in FrameLayout.objects.filter(cluster=cluster, kind=kind)
    }
    if not layouts:
        return
    resolution = HOUR if (end - start).total_seconds() >= HOURLY_FRAMES_FROM else MINUTE
    rows = plain_rows(
        Frame.objects.filter(
            metric=metric,
            layout_id__in=list(layouts),
            resolution=resolution,
            ts__gte=start,
            ts__lt=end,
        )
        .order_by()
        .values_list("layout_id", "ts", "count", "sum")
    )
    grouped: dict[tuple[int, int], list[tuple[bytes, bytes]]] = {}
    for layout_id, ts, count, total in rows:
        hour = int(ts.timestamp() // HOUR * HOUR)
        grouped.setdefault((layout_id, hour), []).append((bytes(count), bytes(total)))
    for (layout_id, hour), chunks in grouped.items():
        layout = layouts[layout_id]
        count = stacked([c for c, _ in chunks], COUNT_DTYPE, layout.size).sum(axis=0)
        total = stacked([t for _, t in chunks], SUM_DTYPE, layout.size).sum(axis=0)
        has = count > 0
        ids = layout_entity_ids(layout)[has]
        parts.append(_part(np.full(ids.size, hour), ids, total[has], count[has]))


def entity_window_sums(
    *, cluster: Cluster, metric_names: list[str], kind: str, start: datetime, end: datetime
) -> dict[str, dict[int, tuple[float, int]]]:
    """``{metric: {entity_id: (sum, count)}}`` of several metrics over one short window.

    What :func:`entity_sums` gives one metric at a time, for all of them in six queries
    (definitions, watermark, rollups, samples, layouts, frames) — the overview's serving
    tiles read five metrics of every service each refresh. Minute tiers only: meant for
    windows of minutes to a few hours (frames from the minute before ``start``'s minute on).
    """
    metrics = dict(MetricDefinition.objects.filter(name__in=metric_names).values_list("pk", "name"))
    out: dict[str, dict[int, list[float]]] = {name: {} for name in metric_names}
    if not metrics:
        return {name: {} for name in metric_names}

    def add(metric_id: int, entity_id: int, total: float, n: int) -> None:
        cell = out[metrics[metric_id]].setdefault(int(entity_id), [0.0, 0])
        cell[0] += float(total or 0.0)
        cell[1] += int(n or 0)

    where = {"metric_id__in": list(metrics), "entity__cluster": cluster, "entity__kind": kind}
    complete = watermarks().get(MINUTE)
    raw_from = start
    if complete and complete > start:
        upto = min(complete, end)
        for row in (
            Rollup.objects.filter(resolution=MINUTE, bucket__gte=start, bucket__lt=upto, **where)
            .order_by()
            .values("metric_id", "entity_id")
            .annotate(total=Sum("sum"), n=Sum("count"))
            .values_list("metric_id", "entity_id", "total", "n")
        ):
            add(*row)
        raw_from = max(start, upto)
    if raw_from < end:
        for row in (
            Sample.objects.filter(ts__gte=raw_from, ts__lt=end, **where)
            .order_by()
            .values("metric_id", "entity_id")
            .annotate(total=Sum("value"), n=Count("id"))
            .values_list("metric_id", "entity_id", "total", "n")
        ):
            add(*row)
    layouts = {
        layout.pk: layout for layout in FrameLayout.objects.filter(cluster=cluster, kind=kind)
    }
    if layouts:
        frame_start = datetime.fromtimestamp(start.timestamp() // MINUTE * MINUTE, tz=UTC)
        grouped: dict[tuple[int, int], list[tuple[bytes, bytes]]] = {}
        for metric_id, layout_id, count, total in plain_rows(
            Frame.objects.filter(
                metric_id__in=list(metrics),
                layout_id__in=list(layouts),
                resolution=MINUTE,
                ts__gte=frame_start,
                ts__lt=end,
            )
            .order_by()
            .values_list("metric_id", "layout_id", "count", "sum")
        ):
            grouped.setdefault((metric_id, layout_id), []).append((bytes(count), bytes(total)))
        for (metric_id, layout_id), chunks in grouped.items():
            layout = layouts[layout_id]
            count = stacked([c for c, _ in chunks], COUNT_DTYPE, layout.size).sum(axis=0)
            total = stacked([t for _, t in chunks], SUM_DTYPE, layout.size).sum(axis=0)
            ids = layout_entity_ids(layout)
            for i in np.nonzero(count > 0)[0].tolist():
                add(metric_id, ids[i], total[i], count[i])
    return {
        name: {e: (t, int(n)) for e, (t, n) in cells.items() if n} for name, cells in out.items()
    }
