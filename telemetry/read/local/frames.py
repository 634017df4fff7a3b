"""Reading dense frames: one entity's series, the latest array, fleet aggregates.

One entity's values are cut out of each frame by the database (``substr`` on the stored
bytes), so a single card's series never ships whole-cluster arrays over the wire.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

import numpy as np
from django.db import connection
from django.db.models import Func, Min, Q

from telemetry.models import Entity, Frame, FrameLayout, MetricDefinition
from telemetry.store.frame_codec import entity_cut, frame_array, frame_value, is_compressed
from telemetry.store.frames import (
    COUNT_DTYPE,
    DEFERRED_RESOLUTIONS,
    MINUTE,
    SUM_DTYPE,
    VALUE_DTYPE,
    layout_entity_ids,
)


def _slice(field: str, index: int, width: int, size: int) -> Func:
    return entity_cut(field, index, width, size)


def entity_positions(entity: Entity) -> list[tuple[FrameLayout, int]]:
    """Every layout of the entity's cluster and kind that contains it, with its position."""
    found = []
    for layout in FrameLayout.objects.filter(cluster_id=entity.cluster_id, kind=entity.kind):
        hits = np.nonzero(layout_entity_ids(layout) == entity.pk)[0]
        if hits.size:
            found.append((layout, int(hits[0])))
    return found


def frame_buckets(
    *,
    metric: MetricDefinition,
    entity: Entity,
    start: datetime,
    end: datetime,
    resolution: int,
    step: int,
    buckets: dict[int, list[float]],
    positions: list[tuple[FrameLayout, int]] | None = None,
) -> None:
    """Fold the entity's frame values in ``[start, end)`` into ``buckets`` of ``step`` s."""
    positions = entity_positions(entity) if positions is None else positions
    if not positions:
        return
    segments = frame_segments(
        metric_id=metric.pk,
        layout_ids=[layout.pk for layout, _ in positions],
        resolution=resolution,
        start=start,
        end=end,
    )
    for layout, index in positions:
        for tier, parts in segments.items():
            for layout_id, lo, hi in parts:
                if layout_id == layout.pk:
                    _fold_entity_frames(metric, layout, index, tier, lo, hi, step, buckets)


def _fold_entity_frames(
    metric: MetricDefinition,
    layout: FrameLayout,
    index: int,
    resolution: int,
    start: datetime,
    end: datetime,
    step: int,
    buckets: dict,
) -> None:
    frames = Frame.objects.filter(
        metric=metric, layout=layout, resolution=resolution, ts__gte=start, ts__lt=end
    )
    if resolution == 0:
        rows = frames.annotate(v=_slice("values", index, 4, layout.size)).values_list("ts", "v")
        for ts, raw in rows.iterator():
            value = float(frame_value(raw, VALUE_DTYPE, index))
            if np.isnan(value):
                continue
            fold_bucket(buckets, int(ts.timestamp() // step * step), 1, value, value, value)
        return
    rows = frames.annotate(
        c=_slice("count", index, 4, layout.size),
        s=_slice("sum", index, 8, layout.size),
        lo=_slice("min", index, 4, layout.size),
        hi=_slice("max", index, 4, layout.size),
    ).values_list("ts", "c", "s", "lo", "hi")
    for ts, c, s, lo, hi in rows.iterator():
        count = int(frame_value(c, COUNT_DTYPE, index))
        if count:
            fold_bucket(
                buckets,
                int(ts.timestamp() // step * step),
                count,
                float(frame_value(s, SUM_DTYPE, index)),
                float(frame_value(lo, VALUE_DTYPE, index)),
                float(frame_value(hi, VALUE_DTYPE, index)),
            )


def fold_bucket(buckets: dict, key: int, count: int, total: float, low: float, high: float) -> None:
    """Merge ``(count, sum, min, max)`` into ``buckets[key]`` (the shape every series uses)."""
    agg = buckets.get(key)
    if agg is None:  # the usual case: one source per bucket, nothing to merge
        buckets[key] = [count, total, low, high]
        return
    agg[0] += count
    agg[1] += total
    agg[2] = min(agg[2], low)
    agg[3] = max(agg[3], high)


def latest_frame(
    *, metric: MetricDefinition, layout: FrameLayout, since: datetime
) -> tuple[datetime, np.ndarray] | None:
    frame = (
        Frame.objects.filter(metric=metric, layout=layout, resolution=0, ts__gte=since)
        .order_by("-ts")
        .only("ts", "values")
        .first()
    )
    if frame is None:
        return None
    return frame.ts, frame_array(frame.values, VALUE_DTYPE)


def latest_frames(
    *, metrics: Iterable[MetricDefinition], layout: FrameLayout, since: datetime
) -> dict[int, tuple[datetime, np.ndarray]]:
    """``{metric id: (time, values)}``: the newest raw frame of each metric in one layout.

    On PostgreSQL one round trip whatever the number of metrics (a backwards probe of the
    unique index per metric); elsewhere one query per metric."""
    metric_ids = [metric.pk for metric in metrics]
    out: dict[int, tuple[datetime, np.ndarray]] = {}
    if connection.vendor == "postgresql" and metric_ids:
        with connection.cursor() as cursor:
            cursor.execute(_PG_LATEST_FRAMES, [metric_ids, layout.pk, since])
            for metric_id, ts, values in cursor.fetchall():
                out[metric_id] = (ts, frame_array(values, VALUE_DTYPE))
        return out
    for metric in metrics:
        found = latest_frame(metric=metric, layout=layout, since=since)
        if found is not None:
            out[metric.pk] = found
    return out


_PG_LATEST_FRAMES = f"""
SELECT m.id, f.ts, f."values" FROM unnest(%s::bigint[]) AS m(id)
CROSS JOIN LATERAL (
    SELECT ts, "values" FROM {Frame._meta.db_table}
    WHERE metric_id = m.id AND layout_id = %s AND resolution = 0 AND ts >= %s
    ORDER BY ts DESC LIMIT 1
) AS f
"""


def latest_frame_values(entity_ids: list[int], *, since: datetime) -> dict[int, dict[str, float]]:
    """``{entity_id: {metric: latest value}}`` for entities that live in frames."""
    wanted = set(entity_ids)
    result: dict[int, dict[str, float]] = {}
    entities = Entity.objects.filter(pk__in=wanted).values_list("cluster_id", "kind").distinct()
    layouts = FrameLayout.objects.none()
    for cluster_id, kind in entities:
        layouts = layouts | FrameLayout.objects.filter(cluster_id=cluster_id, kind=kind)
    for layout in layouts:
        ids = layout_entity_ids(layout)
        mask = np.isin(ids, list(wanted))
        if not mask.any():
            continue
        metric_ids = (
            Frame.objects.filter(layout=layout, resolution=0, ts__gte=since)
            .values_list("metric_id", flat=True)
            .distinct()
        )
        for metric in MetricDefinition.objects.filter(pk__in=list(metric_ids)):
            latest = latest_frame(metric=metric, layout=layout, since=since)
            if latest is None:
                continue
            values = latest[1]
            for position in np.nonzero(mask)[0]:
                value = float(values[position])
                if not np.isnan(value):
                    result.setdefault(int(ids[position]), {})[metric.name] = value
    return result


def frame_means(
    *, metric: MetricDefinition, cluster_id: int, since: datetime
) -> dict[int, tuple[float, float]]:
    """``{entity_id: (sum, count)}`` of minute-rollup frames since ``since``."""
    out: dict[int, tuple[float, float]] = {}
    for layout in FrameLayout.objects.filter(cluster_id=cluster_id):
        frames = Frame.objects.filter(metric=metric, layout=layout, resolution=60, ts__gte=since)
        total = count = None
        for c, s in frames.values_list("count", "sum").iterator():
            c_arr = frame_array(c, COUNT_DTYPE).astype(np.int64)
            s_arr = frame_array(s, SUM_DTYPE)
            total = s_arr.copy() if total is None else total + s_arr
            count = c_arr if count is None else count + c_arr
        if total is None:
            continue
        for entity_id, t, n in zip(layout_entity_ids(layout).tolist(), total, count, strict=True):
            if n:
                out[entity_id] = (float(t), float(n))
    return out


# --- Tiered range reads -------------------------------------------------------------------
# Rollup frames are merged as frames are written, so there is no watermark: what a tier holds
# is simply what is stored. A tier can start later than the range (the 15-minute tier did not
# exist before an upgrade; the demo keeps minute frames for 2 h only), so a range is covered
# newest part first by the chosen tier, then by finer tiers, then by coarser ones. Boundaries
# between tiers are hour-aligned so no bucket is counted twice.
ROLLUP_TIERS = (60, 900, 3600)
_ALIGN = 3600


def tier_preference(resolution: int) -> list[int]:
    if resolution == 0:
        return [0]
    finer = [r for r in sorted(ROLLUP_TIERS, reverse=True) if r < resolution]
    coarser = [r for r in sorted(ROLLUP_TIERS) if r > resolution]
    return [resolution, *finer, *coarser]


def frame_segments(
    *, metric_id: int, layout_ids: list[int], resolution: int, start: datetime, end: datetime
) -> dict[int, list[tuple[int, datetime, datetime]]]:
    """``{resolution: [(layout id, lo, hi), …]}``: which tier answers which part of the range.

    One query (the oldest frame of each tier and layout in the range), whatever the range.
    """
    many = frame_segments_many(
        metric_ids=[metric_id], layout_ids=layout_ids, resolution=resolution, start=start, end=end
    )
    return many.get(metric_id, {})


def frame_segments_many(
    *, metric_ids: list[int], layout_ids: list[int], resolution: int, start: datetime, end: datetime
) -> dict[int, dict[int, list[tuple[int, datetime, datetime]]]]:
    """:func:`frame_segments` of several metrics in one query: ``{metric id: {resolution:
    [(layout id, lo, hi), …]}}``."""
    tiers = tier_preference(resolution)
    if not layout_ids or not metric_ids:
        return {}
    if tiers == [0]:
        whole = [(layout_id, start, end) for layout_id in layout_ids]
        return {metric_id: {0: list(whole)} for metric_id in metric_ids}
    firsts: dict[tuple[int, int, int], datetime] = {}
    rows = (
        Frame.objects.filter(
            metric_id__in=metric_ids,
            layout_id__in=layout_ids,
            resolution__in=tiers,
            ts__gte=start,
            ts__lt=end,
        )
        .values("metric_id", "layout_id", "resolution")
        .annotate(first=Min("ts"))
        .values_list("metric_id", "layout_id", "resolution", "first")
    )
    for metric_id, layout_id, tier, first in rows:
        firsts[(metric_id, layout_id, tier)] = first
    # Writers fold frames into the minute tier only; compaction folds closed minutes into the
    # coarser tiers later (``store.frame_close``). Until it has, the minute tier answers the
    # newest part of the range, from the start of the coarse bucket compaction is still in.
    pending = {}
    if tiers[0] in DEFERRED_RESOLUTIONS and MINUTE in tiers:
        pending = dict(
            FrameLayout.objects.filter(
                pk__in=layout_ids, coarse_until__isnull=False, coarse_until__lt=end
            ).values_list("pk", "coarse_until")
        )
    out: dict[int, dict[int, list[tuple[int, datetime, datetime]]]] = {}
    for metric_id in metric_ids:
        per_tier: dict[int, list[tuple[int, datetime, datetime]]] = {}
        for layout_id in layout_ids:
            hi = end
            until = pending.get(layout_id)
            if until is not None:
                floor = until.timestamp() // tiers[0] * tiers[0]
                lo = max(start, datetime.fromtimestamp(floor, tz=UTC))
                if lo < hi:
                    per_tier.setdefault(MINUTE, []).append((layout_id, lo, hi))
                    hi = lo
                if hi <= start:
                    continue
            for tier in tiers:
                first = firsts.get((metric_id, layout_id, tier))
                if first is None or first >= hi:
                    continue
                lo = start
                if first > start + timedelta(seconds=tier):
                    # Partial cover: start at the next hour so the next tier fills whole buckets.
                    aligned = -(-first.timestamp() // _ALIGN) * _ALIGN
                    if aligned >= hi.timestamp():
                        # Its data starts within the range's last hour (a new layout, or the
                        # coarse tiers not folded yet): it answers from that hour on.
                        aligned = first.timestamp() // _ALIGN * _ALIGN
                    lo = max(start, datetime.fromtimestamp(aligned, tz=UTC))
                    if lo >= hi:
                        continue
                per_tier.setdefault(tier, []).append((layout_id, lo, hi))
                hi = lo
                if hi <= start:
                    break
        out[metric_id] = per_tier
    return out


def segments_filter(segments: list[tuple[int, datetime, datetime]]) -> Q:
    condition = Q()
    for layout_id, lo, hi in segments:
        condition |= Q(layout_id=layout_id, ts__gte=lo, ts__lt=hi)
    return condition


def stacked(chunks: list[bytes], dtype, size: int) -> np.ndarray:
    """Rows of equal-length frame bytes as one ``(n, size)`` array (one copy, no per-row
    NumPy objects)."""
    if not chunks:
        return np.zeros((0, size), dtype=dtype)
    if any(is_compressed(chunk) for chunk in chunks):
        return np.stack([frame_array(chunk, dtype) for chunk in chunks]).reshape(len(chunks), size)
    return np.frombuffer(b"".join(chunks), dtype=dtype).reshape(len(chunks), size)
