"""Compaction: build rollups up to a watermark — minutes from raw samples, quarter hours from
minutes, hours from quarter hours, days from hours — exactly once.

Runs under an exclusive advisory lock (PostgreSQL) while ingestion holds it shared, so no
sample is committed into a range that a compaction has already passed; a later sample for a
compacted bucket is folded in by ingestion itself (see :mod:`telemetry.store.samples`).
Only buckets that ended ``lag`` seconds ago are compacted, so a bucket is closed once.
"""

from __future__ import annotations

import time
from datetime import datetime

from django.db import connection, transaction
from django.db.models import Min

from telemetry.models import Rollup, RollupWatermark, Sample
from telemetry.store.samples import (
    ADVISORY_LOCK_KEY,
    bucket_start,
    group_rows,
    rollups_add,
    to_datetime,
)

# (resolution, built from resolution). The 15-minute tier came later: on a store that has no
# 15-minute watermark yet its first run builds it from every minute rollup still kept.
SOURCES = ((60, 0), (900, 60), (3600, 900), (86400, 3600))
DEFAULT_LAG_SECONDS = 90

_PG_FROM_RAW = """
INSERT INTO monitoring_rollup (metric_id, entity_id, resolution, bucket, count, sum, min, max)
SELECT metric_id, entity_id, %s, to_timestamp(floor(extract(epoch FROM ts) / %s) * %s),
       count(*), sum(value), min(value), max(value)
FROM monitoring_sample WHERE ts >= %s AND ts < %s
GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
ON CONFLICT (metric_id, entity_id, resolution, bucket) DO UPDATE SET
    count = monitoring_rollup.count + EXCLUDED.count,
    sum = monitoring_rollup.sum + EXCLUDED.sum,
    min = LEAST(monitoring_rollup.min, EXCLUDED.min),
    max = GREATEST(monitoring_rollup.max, EXCLUDED.max)
"""

_PG_FROM_ROLLUP = """
INSERT INTO monitoring_rollup (metric_id, entity_id, resolution, bucket, count, sum, min, max)
SELECT metric_id, entity_id, %s, to_timestamp(floor(extract(epoch FROM bucket) / %s) * %s),
       sum(count), sum(sum), min(min), max(max)
FROM monitoring_rollup WHERE resolution = %s AND bucket >= %s AND bucket < %s
GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
ON CONFLICT (metric_id, entity_id, resolution, bucket) DO UPDATE SET
    count = monitoring_rollup.count + EXCLUDED.count,
    sum = monitoring_rollup.sum + EXCLUDED.sum,
    min = LEAST(monitoring_rollup.min, EXCLUDED.min),
    max = GREATEST(monitoring_rollup.max, EXCLUDED.max)
"""


def _first_data(source: int) -> datetime | None:
    if source == 0:
        return Sample.objects.aggregate(first=Min("ts"))["first"]
    return Rollup.objects.filter(resolution=source).aggregate(first=Min("bucket"))["first"]


def rollups_compact(*, now: float | None = None, lag: float = DEFAULT_LAG_SECONDS) -> dict:
    """Advance every watermark as far as closed buckets allow; returns the new watermarks."""
    now = now if now is not None else time.time()
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [ADVISORY_LOCK_KEY])
        marks = {m.resolution: m for m in RollupWatermark.objects.select_for_update()}
        limit = now - lag
        result = {}
        for resolution, source in SOURCES:
            # A coarser bucket closes only when the finer rollups it is built from are complete.
            target = bucket_start(limit, resolution)
            mark = marks.get(resolution)
            start = mark.complete_until.timestamp() if mark else None
            if start is None:
                first = _first_data(source)
                start = bucket_start(first.timestamp(), resolution) if first else target
            if target > start:
                _compact(resolution, source, start, target)
            RollupWatermark.objects.update_or_create(
                resolution=resolution, defaults={"complete_until": to_datetime(max(start, target))}
            )
            result[resolution] = to_datetime(max(start, target))
            limit = max(start, target)
    return result


def _compact(resolution: int, source: int, start: float, end: float) -> None:
    lo, hi = to_datetime(start), to_datetime(end)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            if source == 0:
                cursor.execute(_PG_FROM_RAW, [resolution, resolution, resolution, lo, hi])
            else:
                cursor.execute(
                    _PG_FROM_ROLLUP, [resolution, resolution, resolution, source, lo, hi]
                )
        return
    if source == 0:
        rows = (
            (m, e, ts.timestamp(), 1, v, v, v)
            for m, e, ts, v in Sample.objects.filter(ts__gte=lo, ts__lt=hi)
            .values_list("metric_id", "entity_id", "ts", "value")
            .iterator()
        )
    else:
        rows = (
            (m, e, b.timestamp(), c, s, mn, mx)
            for m, e, b, c, s, mn, mx in Rollup.objects.filter(
                resolution=source, bucket__gte=lo, bucket__lt=hi
            )
            .values_list("metric_id", "entity_id", "bucket", "count", "sum", "min", "max")
            .iterator()
        )
    rollups_add(group_rows(rows, resolution))
