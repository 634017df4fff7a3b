"""Spans busy throughout, from the 15-minute rollups: the fast path of
:func:`telemetry.read.local.runs.runs_under` (docs/architecture.md, allocated but idle).

A 15-minute bucket whose **minimum** is at or over the threshold holds no reading under it,
so no point read from inside it can be under. A span every one of whose 15-minute buckets
is busy, and whose readings after the 15-minute watermark and in the last 15 minutes (from
the minute rollups and raw samples its own read would use) are all at or over the threshold
too, has no run — whatever its cadence or holes — and is *measured* when one of those recent
readings falls after its start. Such spans need none of their minute detail; every other
span (a reading under the threshold anywhere, or no recent reading) goes through the exact
fold. The checks are conservative (a bucket that merely reaches the span's window counts),
so a span answered here is answered as the minute-by-minute fold answers it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from django.db import connection

from telemetry.models import Entity, MetricDefinition

COARSE = 900

# Per span: any 15-minute bucket reaching its window with a reading under the threshold, any
# later reading (minute rollup or raw sample) under it, and any later reading after its start.
_BUSY = """
WITH spans AS (
    SELECT * FROM unnest(%s::int[], %s::bigint[], %s::float8[], %s::float8[])
        AS s(i, entity_id, lo, since)
), coarse AS (
    SELECT entity_id, date_part('epoch', bucket) AS t, min AS v
    FROM monitoring_rollup
    WHERE metric_id = %s AND entity_id = ANY(%s) AND resolution = {coarse}
          AND bucket >= %s AND bucket < %s
), tail AS (
    {tail}
), flags AS (
    SELECT s.i, bool_or(c.v < %s) AS under
    FROM spans s JOIN coarse c ON c.entity_id = s.entity_id AND c.t + {coarse} > s.lo
    GROUP BY s.i
    UNION ALL
    SELECT s.i, bool_or(t.v < %s AND t.t + t.width > s.lo) OR NOT bool_or(t.t >= s.since)
    FROM spans s LEFT JOIN tail t ON t.entity_id = s.entity_id
    GROUP BY s.i
)
SELECT i FROM flags GROUP BY i HAVING NOT bool_or(under IS NOT FALSE)"""
_TAIL_MINUTES = """
SELECT entity_id, date_part('epoch', bucket) AS t, min AS v, 60.0 AS width
FROM monitoring_rollup
WHERE metric_id = %s AND entity_id = ANY(%s) AND resolution = 60 AND bucket >= %s
      AND bucket < %s"""
_TAIL_RAW = """
SELECT entity_id, date_part('epoch', ts) AS t, value AS v, 0.0 AS width
FROM monitoring_sample
WHERE metric_id = %s AND entity_id = ANY(%s) AND ts >= %s AND ts < %s"""


def busy_throughout(
    *,
    metric: MetricDefinition,
    spans: Sequence[tuple[Entity, datetime]],
    first: datetime,
    end: datetime,
    threshold: float,
    resolution: int,
    step: int,
    marks: dict[int, datetime],
) -> set[int]:
    """Indices of the ``spans`` (entity, from) that are busy throughout and measured, for a
    read of ``[first, end)`` at ``resolution`` (0: raw, or 60) and ``step``; an empty set
    when there is no 15-minute watermark (nothing compacted yet: every span is folded)."""
    coarse_until = marks.get(COARSE)
    if not spans or coarse_until is None or resolution >= COARSE:
        return set()
    # The 15-minute tier is built from the minute tier: never trust it past the minutes'.
    coarse_until = min(coarse_until, marks.get(60, coarse_until), end)
    ids = sorted({e.pk for e, _since in spans})
    # The readings after the 15-minute watermark, and at least the last 15 minutes (the
    # proof of a recent reading), from the tiers the span's own read uses.
    tail_from = min(coarse_until, end - timedelta(seconds=COARSE))
    tails: list[tuple[str, list]] = []
    minutes_until = marks.get(60) if resolution == 60 else None
    raw_from = tail_from
    if minutes_until is not None and minutes_until > tail_from:
        upto = min(minutes_until, end)
        tails.append((_TAIL_MINUTES, [metric.pk, ids, tail_from, upto]))
        raw_from = upto
    if raw_from < end:
        tails.append((_TAIL_RAW, [metric.pk, ids, raw_from, end]))
    sql = _BUSY.format(coarse=COARSE, tail=" UNION ALL ".join(f"({s})" for s, _p in tails))
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
    params += [threshold, threshold]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return {row[0] for row in cursor.fetchall()}
