"""Runs of readings under a threshold, per (entity, from) span: what "idle" means for the
allocated-but-idle list, the ledger's allocated-idle split and the alert rule.

The points are those :func:`telemetry.read.local.series_entities.series_read_entities` reads
(the same tiers, step and buckets) over ``[earliest span start, end)``; a span keeps the
buckets that reach past its start. A point is *under* when its bucket's **maximum** is under
the threshold (one busy second inside a bucket is not hidden by its mean). A run is a stretch
of consecutive under points; more than two cadences without a point end it (no data is not
idleness); a run covers its readings up to one cadence after the last. The cadence is the
median spacing of the span's points (exporters scrape every 15–60 s whatever the read's
bucket), at least the read's step.

On PostgreSQL the runs are found in the database (one statement: a window over the buckets),
so a 10,000-card read ships a few thousand runs instead of a million buckets, and spans
the 15-minute rollups show busy throughout are answered without their minute detail
(:mod:`telemetry.read.local.runs_coarse`); :func:`runs_of_points` is the same rule in
Python, for the other databases, the twin's frames and PromQL sources (whose points arrive
as series).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection

from telemetry.models import Entity, FrameLayout, MetricDefinition
from telemetry.read.local.runs_coarse import (
    fetch_with_work_mem,
    idle_runs,
    span_classes,
    tier_ranges,
)
from telemetry.read.local.series import Series, SeriesPoint, choose_source, utc_at
from telemetry.read.local.series_entities import series_read_entities
from telemetry.read.local.under_runs import SpanRuns, UnderRun
from telemetry.store.samples import watermarks

# The upper median, as ``sorted(gaps)[len(gaps) // 2]``: percentile_disc picks the first
# value whose cumulative share reaches the fraction, so just over a half picks index n // 2.
_UPPER_MEDIAN = 0.5 + 1e-9
RUNS_WORK_MEM = "128MB"


@dataclass(frozen=True)
class SpanEntity:
    """What :func:`runs_under` needs of a card the store answers (id, cluster, kind, key):
    read as plain values, so 10,000 held cards build no model rows; spans the store reads
    through series (other databases, the twin's frames) fetch their whole rows themselves."""

    pk: int
    cluster_id: int | None
    kind: str
    key: str


def span_entities(
    ids: Iterable[int],
    whole_clusters: Collection[int] = (),
    *,
    known: Iterable[SpanEntity] = (),
) -> dict[int, Entity | SpanEntity]:
    """``{id: entity}`` for :func:`telemetry.read.runs_under`'s spans: a :class:`SpanEntity`
    each, or the whole row for entities of ``whole_clusters`` (those a PromQL server
    answers, whose reads need every field). ``known``: cards already read with those fields
    (card holdings carry them), taken as they are outside ``whole_clusters``."""
    whole = set(whole_clusters)
    taken: dict[int, Entity | SpanEntity] = {e.pk: e for e in known if e.cluster_id not in whole}
    ids = [pk for pk in ids if pk not in taken]
    if not ids:
        return taken
    found: dict[int, Entity | SpanEntity] = {
        pk: SpanEntity(pk, cluster_id, kind, key)
        for pk, cluster_id, kind, key in Entity.objects.filter(pk__in=ids)
        .exclude(cluster_id__in=list(whole_clusters))
        .values_list("pk", "cluster_id", "kind", "key")
    }
    if whole_clusters:
        found.update(
            Entity.objects.filter(pk__in=ids, cluster_id__in=list(whole_clusters)).in_bulk()
        )
    return {**taken, **found}


def cadence_of(points: Sequence[SeriesPoint], step: float) -> float:
    """Seconds between readings: the upper median spacing of the points, at least ``step``
    (one point alone: ``TELEMETRY_INTERVAL_SECONDS``)."""
    gaps = sorted((b.ts - a.ts).total_seconds() for a, b in zip(points, points[1:], strict=False))
    spacing = gaps[len(gaps) // 2] if gaps else float(settings.TELEMETRY_INTERVAL_SECONDS)
    return max(float(step), spacing, 1.0)


def runs_of_points(points: Sequence[SeriesPoint], step: float, threshold: float) -> SpanRuns:
    """The module's rule over points already read (oldest first)."""
    if not points:
        return SpanRuns(measured=False)
    cadence = cadence_of(points, step)
    gap, width = timedelta(seconds=2 * cadence), timedelta(seconds=cadence)
    runs: list[UnderRun] = []
    begin = last = None
    for point in points:
        under = point.max < threshold
        if begin is not None and (not under or point.ts - last > gap):
            runs.append(UnderRun(begin, last + width, False))
            begin = None
        if under:
            begin = begin or point.ts
            last = point.ts
    if begin is not None:
        runs.append(UnderRun(begin, last + width, True))
    return SpanRuns(measured=True, runs=runs)


_RAW = """
SELECT entity_id, floor(date_part('epoch', ts) / %s) * %s AS k, max(value) AS hi
FROM monitoring_sample
WHERE metric_id = %s AND entity_id = ANY(%s) AND ts >= %s AND ts < %s
GROUP BY 1, 2"""
_ROLLUP = """
SELECT entity_id, floor(date_part('epoch', bucket) / %s) * %s AS k, max(max) AS hi
FROM monitoring_rollup
WHERE metric_id = %s AND entity_id = ANY(%s) AND resolution = %s AND bucket >= %s
      AND bucket < %s
GROUP BY 1, 2"""
# Per span: its buckets with the previous and next one (lag/lead), the cadence (upper median
# of the gaps), then the points that open or close a run, paired in order.
_RUNS = """
WITH spans AS (
    SELECT * FROM unnest(%s::int[], %s::bigint[], %s::float8[]) AS s(i, entity_id, lo)
), b AS (
    {buckets}
), p AS MATERIALIZED (
    SELECT s.i, b.k, b.hi < %s AS under,
           b.k - lag(b.k) OVER w AS gap, lag(b.hi < %s) OVER w AS prev_under,
           lead(b.k) OVER w - b.k AS next_gap, lead(b.hi < %s) OVER w AS next_under
    FROM spans s JOIN b ON b.entity_id = s.entity_id AND b.k > s.lo
    WINDOW w AS (PARTITION BY s.i ORDER BY b.k)
), c AS (
    SELECT i, greatest(%s, coalesce(percentile_disc(%s) WITHIN GROUP (ORDER BY gap), %s), 1.0)
               AS cadence,
           max(k) AS last_k
    FROM p GROUP BY i
), f AS (
    SELECT p.i, p.k,
           p.prev_under IS NOT TRUE OR p.gap > 2 * c.cadence AS opens,
           p.next_under IS NOT TRUE OR p.next_gap > 2 * c.cadence AS closes
    FROM p JOIN c USING (i)
    WHERE p.under AND (p.prev_under IS NOT TRUE OR p.next_under IS NOT TRUE
                       OR p.gap > 2 * c.cadence OR p.next_gap > 2 * c.cadence)
), o AS (
    SELECT i, k, row_number() OVER (PARTITION BY i ORDER BY k) AS n FROM f WHERE opens
), e AS (
    SELECT i, k, row_number() OVER (PARTITION BY i ORDER BY k) AS n FROM f WHERE closes
)
SELECT c.i, c.cadence, o.k, e.k, e.k = c.last_k
FROM c LEFT JOIN o ON o.i = c.i LEFT JOIN e ON e.i = o.i AND e.n = o.n
ORDER BY c.i, o.k"""


def _tiers(metric_id: int, ids: list[int], start, end, resolution: int, step: int, marks):
    """The tier walk of ``fold_grouped_tiers`` as statements: rollups up to their
    watermark, then the next finer source for the rest of the range."""
    return [
        (_RAW, [step, step, metric_id, ids, lo, hi]) if tier == 0
        else (_ROLLUP, [step, step, metric_id, ids, tier, lo, hi])
        for tier, lo, hi in tier_ranges(start, end, resolution, marks)
    ]  # fmt: skip


def runs_under_grouped(
    *,
    metric: MetricDefinition,
    spans: Sequence[tuple[Entity, datetime]],
    end: datetime,
    threshold: float,
    read_from: datetime | None = None,
    marks: dict[int, datetime] | None = None,
) -> list[SpanRuns]:
    """:func:`runs_of_points` of every span in one statement (PostgreSQL, stored rows);
    ``read_from`` (default: the earliest span start) decides the read's tier and step;
    ``marks``: the rollup watermarks, when the caller has read them."""
    if not spans:
        return []
    first = read_from or min(since for _e, since in spans)
    _source, resolution, step = choose_source(first, end)
    ids = sorted({e.pk for e, _since in spans})
    marks = watermarks() if marks is None else marks
    parts = _tiers(metric.pk, ids, first, end, resolution, step, marks)
    found = [SpanRuns(measured=False) for _ in spans]
    if not parts:
        return found
    # One tier needs no second grouping (the usual case: a few hours of raw samples).
    buckets = parts[0][0] if len(parts) == 1 else (
        "SELECT entity_id, k, max(hi) AS hi FROM ("
        + " UNION ALL ".join(f"({s})" for s, _p in parts) + ") t GROUP BY 1, 2"
    )  # fmt: skip
    sql = _RUNS.format(buckets=buckets)
    params: list = [
        list(range(len(spans))),
        [e.pk for e, _since in spans],
        [since.timestamp() - step for _e, since in spans],
    ]
    for _sql, part in parts:
        params.extend(part)
    params += [threshold] * 3
    params += [float(step), _UPPER_MEDIAN, float(settings.TELEMETRY_INTERVAL_SECONDS)]
    runs: dict[int, list[UnderRun]] = {}
    # The window sorts a million buckets at the 10,000-card size: in memory, not on disk
    # (measured: two 46 MB external merges).
    rows = fetch_with_work_mem(sql, params, RUNS_WORK_MEM)
    for i, cadence, opened, closed, current in rows:
        mine = runs.setdefault(i, [])
        if opened is not None:
            width = float(cadence)
            mine.append(
                UnderRun(utc_at(int(opened)), utc_at(int(closed)) + timedelta(seconds=width),
                         bool(current))
            )  # fmt: skip
    for i, mine in runs.items():
        found[i] = SpanRuns(measured=True, runs=mine)
    return found


def runs_of_series(series: Series, since: datetime, threshold: float) -> SpanRuns:
    """:func:`runs_of_points` of the buckets of ``series`` that reach past ``since``."""
    reach = timedelta(seconds=series.step_seconds)
    points = [p for p in series.points if p.ts + reach > since]
    return runs_of_points(points, series.step_seconds, threshold)


def runs_under(
    *,
    metric: MetricDefinition,
    spans: Sequence[tuple[Entity, datetime]],
    end: datetime,
    threshold: float,
    read_from: datetime | None = None,
) -> list[SpanRuns]:
    """Runs of every span from the store: in one statement on PostgreSQL for stored rows;
    entities with dense frames (the twin) and other databases through their series.
    ``read_from``: where the one read window starts (default: the earliest span's start)."""
    framed = set(
        FrameLayout.objects.filter(
            cluster_id__in={e.cluster_id for e, _s in spans}, kind__in={e.kind for e, _s in spans}
        ).values_list("cluster_id", "kind")
    ) if spans else set()  # fmt: skip
    slow = [
        i for i, (e, _s) in enumerate(spans)
        if connection.vendor != "postgresql" or (e.cluster_id, e.kind) in framed
    ]  # fmt: skip
    slow_set = set(slow)
    fast = [i for i in range(len(spans)) if i not in slow_set]
    found: list[SpanRuns] = [SpanRuns(measured=False)] * len(spans)
    if not spans:
        return found
    # One read window for all spans, so every span is bucketed alike whichever path reads it.
    first = read_from or min(since for _e, since in spans)
    # Spans busy throughout by their 15-minute rollups need no minute detail (runs_coarse).
    _source, resolution, step = choose_source(first, end)
    marks = watermarks()
    busy, idle = span_classes(
        metric=metric, spans=[spans[i] for i in fast], first=first, end=end,
        threshold=threshold, resolution=resolution, step=step, marks=marks,
    )  # fmt: skip
    for j in busy:
        found[fast[j]] = SpanRuns(measured=True)
    idle_found = idle_runs(
        metric=metric, spans=[spans[fast[j]] for j in sorted(idle)], first=first, end=end,
        resolution=resolution, step=step, marks=marks,
    )  # fmt: skip
    for j, runs in zip(sorted(idle), idle_found, strict=True):
        found[fast[j]] = runs
    fast = [i for j, i in enumerate(fast) if j not in busy and j not in idle]
    grouped = runs_under_grouped(
        metric=metric, spans=[spans[i] for i in fast], end=end, threshold=threshold,
        read_from=first, marks=marks,
    )  # fmt: skip
    for i, runs in zip(fast, grouped, strict=True):
        found[i] = runs
    if slow:
        # Spans given as SpanEntity records read their whole rows here (the series need them).
        rows = Entity.objects.in_bulk({spans[i][0].pk for i in slow})
        read = series_read_entities(
            metric=metric, entities=[rows[spans[i][0].pk] for i in slow], start=first, end=end
        )
        for i in slow:
            entity, since = spans[i]
            found[i] = runs_of_series(read[entity.pk], since, threshold)
    return found
