"""Spans busy or idle throughout, from the 15-minute rollups: the fast paths of
:func:`telemetry.read.local.runs.runs_under` (docs/architecture.md, allocated but idle).

A 15-minute bucket whose **minimum** is at or over the threshold holds no reading under it,
so no point read from inside it can be under. A span every one of whose 15-minute buckets
is busy, and whose readings after the 15-minute watermark (from the minute rollups and raw
samples its own read would use) are all at or over the threshold too, has no run — whatever
its cadence or holes — and is *measured* when a reading falls after its start (a 15-minute
bucket that starts at or after it and ends by the read's end, or a later reading). A closed
hour the 15-minute rollups cover (the ledger's) is so classified from its four buckets.
Such spans need none of their minute detail; every other span (a reading under the
threshold anywhere, or no reading after its start) goes through the exact fold. The
checks are conservative (a bucket that merely reaches the span's window counts), so a span
answered here is answered as the minute-by-minute fold answers it.

Symmetrically, a span every bucket **maximum** of which is under the threshold (and its
recent readings too) has every point under: its runs end only at holes, so
:func:`idle_runs` reads only where its points fall — the gaps between its buckets counted by
size inside each card's index walk (the cadence is their upper median), and a second walk
only of the cards whose widest gap is a hole, for where their holes are — instead of the
fold's values, run edges and pairing.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction

from telemetry.models import Entity, MetricDefinition
from telemetry.read.local.series import FINER, utc_at
from telemetry.read.local.under_runs import SpanRuns, UnderRun


def fetch_with_work_mem(sql: str, params: Sequence, work_mem: str) -> list[tuple]:
    """``sql``'s rows with ``work_mem`` raised for this statement only (set inside a
    transaction, then restored), so a large window sort stays in memory."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_setting('work_mem'), set_config('work_mem', %s, true)", [work_mem]
        )
        previous = cursor.fetchone()[0]
        cursor.execute(sql, params)
        rows = cursor.fetchall()
        cursor.execute("SELECT set_config('work_mem', %s, true)", [previous])
    return rows


COARSE = 900
WORK_MEM = "128MB"  # as runs.RUNS_WORK_MEM

# Per span: whether a 15-minute bucket reaching its window, or a later reading (minute rollup
# or raw sample), has a reading under the threshold (its minimum) or one at or over it (its
# maximum), and whether a reading falls after its start (a bucket that starts at or after
# it, or a later reading).
_CLASSES = """
WITH spans AS (
    SELECT * FROM unnest(%s::int[], %s::bigint[], %s::float8[], %s::float8[])
        AS s(i, entity_id, lo, since)
), coarse AS (
    SELECT entity_id, date_part('epoch', bucket) AS t, min AS lo_v, max AS hi_v
    FROM monitoring_rollup
    WHERE metric_id = %s AND entity_id = ANY(%s) AND resolution = {coarse}
          AND bucket >= %s AND bucket < %s
), tail AS (
    {tail}
), flags AS (
    SELECT s.i, bool_or(c.lo_v < %s) AS under, bool_or(c.hi_v >= %s) AS over,
           bool_or(c.t >= s.since AND c.t + {coarse} <= %s) AS recent
    FROM spans s JOIN coarse c ON c.entity_id = s.entity_id AND c.t + {coarse} > s.lo
    GROUP BY s.i
    UNION ALL
    SELECT s.i, bool_or(t.lo_v < %s AND t.t + t.width > s.lo),
           bool_or(t.hi_v >= %s AND t.t + t.width > s.lo), bool_or(t.t >= s.since)
    FROM spans s JOIN tail t ON t.entity_id = s.entity_id
    GROUP BY s.i
)
SELECT i, NOT bool_or(under), NOT bool_or(over) FROM flags GROUP BY i HAVING bool_or(recent)"""
_TAIL_MINUTES = """
SELECT entity_id, date_part('epoch', bucket) AS t, min AS lo_v, max AS hi_v, 60.0 AS width
FROM monitoring_rollup
WHERE metric_id = %s AND entity_id = ANY(%s) AND resolution = 60 AND bucket >= %s
      AND bucket < %s"""
_TAIL_NONE = """
SELECT NULL::bigint AS entity_id, NULL::float8 AS t, NULL::float8 AS lo_v,
       NULL::float8 AS hi_v, NULL::float8 AS width WHERE FALSE"""
_TAIL_RAW = """
SELECT entity_id, date_part('epoch', ts) AS t, value AS lo_v, value AS hi_v, 0.0 AS width
FROM monitoring_sample
WHERE metric_id = %s AND entity_id = ANY(%s) AND ts >= %s AND ts < %s"""


def tier_ranges(
    start: datetime, end: datetime, resolution: int, marks: dict[int, datetime]
) -> list[tuple[int, datetime, datetime]]:
    """The tier walk of ``fold_grouped_tiers``: ``(resolution, from, until)`` — rollups up to
    their watermark, then the next finer source for the rest of the range (0: raw)."""
    ranges: list[tuple[int, datetime, datetime]] = []
    while start < end:
        if resolution == 0:
            ranges.append((0, start, end))
            break
        complete = marks.get(resolution)
        upto = min(end, complete) if complete else start
        if upto > start:
            ranges.append((resolution, start, upto))
        start, resolution = max(start, upto), FINER[resolution]
    return ranges


def span_classes(
    *,
    metric: MetricDefinition,
    spans: Sequence[tuple[Entity, datetime]],
    first: datetime,
    end: datetime,
    threshold: float,
    resolution: int,
    step: int,
    marks: dict[int, datetime],
) -> tuple[set[int], set[int]]:
    """Indices of the ``spans`` (entity, from) busy throughout and idle throughout (every
    reading under the threshold), each with a recent reading after its start, for a read of
    ``[first, end)`` at ``resolution`` (0: raw, or 60) and ``step``; two empty sets when
    there is no 15-minute watermark (nothing compacted yet: every span is folded)."""
    coarse_until = marks.get(COARSE)
    if not spans or coarse_until is None or resolution >= COARSE:
        return set(), set()
    # The 15-minute tier is built from the minute tier: never trust it past the minutes'.
    coarse_until = min(coarse_until, marks.get(60, coarse_until), end)
    ids = sorted({e.pk for e, _since in spans})
    # The readings after the 15-minute watermark, from the tiers the span's own read uses
    # (none for a closed hour the 15-minute rollups already cover: the ledger's read).
    tails: list[tuple[str, list]] = []
    for tier, lo, hi in tier_ranges(coarse_until, end, 60 if resolution == 60 else 0, marks):
        tails.append((_TAIL_RAW, [metric.pk, ids, lo, hi]) if tier == 0
                     else (_TAIL_MINUTES, [metric.pk, ids, lo, hi]))  # fmt: skip
    tail = " UNION ALL ".join(f"({s})" for s, _p in tails) or _TAIL_NONE
    sql = _CLASSES.format(coarse=COARSE, tail=tail)
    params: list = [
        list(range(len(spans))),
        [e.pk for e, _since in spans],
        [since.timestamp() - step for _e, since in spans],
        [since.timestamp() for _e, since in spans],
        metric.pk,
        ids,
        datetime.fromtimestamp(first.timestamp() // COARSE * COARSE, tz=first.tzinfo),
        coarse_until,
    ]
    for _sql, part in tails:
        params.extend(part)
    params += [threshold, threshold, end.timestamp(), threshold, threshold]
    busy, idle = set(), set()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        for i, is_busy, is_idle in cursor.fetchall():
            if is_busy:
                busy.add(i)
            elif is_idle:
                idle.add(i)
    return busy, idle


_K_RAW = """
SELECT ts AS t, floor(date_part('epoch', ts) / %s) * %s AS k FROM monitoring_sample
WHERE metric_id = %s AND entity_id = s.entity_id AND ts >= %s AND ts < %s"""
_K_ROLLUP = """
SELECT bucket AS t, floor(date_part('epoch', bucket) / %s) * %s AS k FROM monitoring_rollup
WHERE metric_id = %s AND entity_id = s.entity_id AND resolution = %s AND bucket >= %s
      AND bucket < %s"""
# Every reading of these spans is under: only the points' buckets matter. Per span, its
# first and last bucket, the cadence (the upper median of the gaps between its distinct
# buckets, from their counts by size) and its widest gap. Each span's readings are walked in
# the index's time order (a bucket never decreases with time) and counted by gap inside the
# walk, so neither a sort nor a materialised row per reading; spans whose widest gap is a
# hole are walked a second time (_HOLES) for where their holes end.
_IDLE = """
WITH spans AS (
    SELECT * FROM unnest(%s::int[], %s::bigint[], %s::float8[]) AS s(i, entity_id, lo)
), x AS MATERIALIZED (
    SELECT s.i, y.gap, y.n, y.first_k, y.last_k
    FROM spans s CROSS JOIN LATERAL (
        SELECT q.gap, count(*) AS n, min(q.k) AS first_k, max(q.k) AS last_k FROM (
            SELECT p.k, p.k - lag(p.k) OVER (ORDER BY p.t) AS gap
            FROM ({points}) p WHERE p.k > s.lo
        ) q GROUP BY q.gap
    ) y
), m AS (
    SELECT i, gap, sum(n) OVER (PARTITION BY i ORDER BY gap) AS upto,
           sum(n) OVER (PARTITION BY i) AS total
    FROM x WHERE gap > 0
), c AS (
    SELECT i, greatest(%s, min(gap) FILTER (WHERE upto > floor(total / 2)), 1.0) AS cadence
    FROM m GROUP BY i
)
SELECT x.i, min(x.first_k), max(x.last_k),
       coalesce(max(c.cadence), greatest(%s, %s, 1.0)), max(x.gap)
FROM x LEFT JOIN c ON c.i = x.i GROUP BY x.i"""
_HOLES = """
WITH spans AS (
    SELECT * FROM unnest(%s::int[], %s::bigint[], %s::float8[], %s::float8[])
        AS s(i, entity_id, lo, wide)
)
SELECT s.i, q.k, q.gap
FROM spans s CROSS JOIN LATERAL (
    SELECT p.k, p.k - lag(p.k) OVER (ORDER BY p.t) AS gap
    FROM ({points}) p WHERE p.k > s.lo
) q
WHERE q.gap > s.wide"""


def idle_runs(
    *,
    metric: MetricDefinition,
    spans: Sequence[tuple[Entity, datetime]],
    first: datetime,
    end: datetime,
    resolution: int,
    step: int,
    marks: dict[int, datetime],
) -> list[SpanRuns]:
    """The runs of spans every reading of which is under the threshold (``span_classes``'
    idle ones): the fold's rule with nothing but holes to end a run — the same points (the
    same tiers and buckets), the same cadence (upper median of the gaps, at least the step),
    a hole of more than two cadences ends a run, a run covers one cadence past its last."""
    if not spans:
        return []
    parts = [
        (_K_RAW, [step, step, metric.pk, lo, hi]) if tier == 0
        else (_K_ROLLUP, [step, step, metric.pk, tier, lo, hi])
        for tier, lo, hi in tier_ranges(first, end, resolution, marks)
    ]  # fmt: skip
    points = " UNION ALL ".join(f"({s})" for s, _p in parts)
    tier_params: list = [value for _sql, part in parts for value in part]
    params: list = [
        list(range(len(spans))),
        [e.pk for e, _since in spans],
        [since.timestamp() - step for _e, since in spans],
        *tier_params,
        float(step),
        float(step),
        float(settings.TELEMETRY_INTERVAL_SECONDS),
    ]
    edges: dict[int, tuple[float, float, float]] = {}
    holed: list[int] = []
    # The counts by gap of every idle card: in memory, not on disk (as runs_under_grouped).
    for i, first_k, last_k, cadence, widest in fetch_with_work_mem(
        _IDLE.format(points=points), params, WORK_MEM
    ):
        edges[i] = (first_k, last_k, float(cadence))
        if widest is not None and widest > 2 * float(cadence):
            holed.append(i)
    holes: dict[int, list[tuple[float, float]]] = {}
    if holed:
        params = [
            holed,
            [spans[i][0].pk for i in holed],
            [spans[i][1].timestamp() - step for i in holed],
            [2 * edges[i][2] for i in holed],
            *tier_params,
        ]
        with connection.cursor() as cursor:
            cursor.execute(_HOLES.format(points=points), params)
            for i, k, gap in cursor.fetchall():
                holes.setdefault(i, []).append((k, gap))
    found = [SpanRuns(measured=False) for _ in spans]
    for i, (low, high, cadence) in edges.items():
        width = timedelta(seconds=cadence)
        runs, begin = [], low
        for k, gap in sorted(holes.get(i, [])):
            runs.append(UnderRun(utc_at(int(begin)), utc_at(int(k - gap)) + width, False))
            begin = k
        runs.append(UnderRun(utc_at(int(begin)), utc_at(int(high)) + width, True))
        found[i] = SpanRuns(measured=True, runs=runs)
    return found
