"""Writing samples and keeping rollups in step, exactly once per (metric, entity, time).

Two paths with the same effect:
- PostgreSQL: COPY the batch into a temporary staging table, then one statement inserts the
  new raw rows (``ON CONFLICT DO NOTHING``) and folds exactly those rows into the rollups.
- SQLite (demo, local tests): filter out points that already exist, insert, and upsert rollups
  computed in Python. SQLite serialises writers, so check-then-insert is race-free there.

Rollups are updated only from rows that were really inserted, so a replayed batch changes
neither raw data nor rollups. Callers own the transaction (``transaction.atomic``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from django.db import connection

ROLLUP_RESOLUTIONS: tuple[int, ...] = (60, 3600, 86400)

# (metric_id, entity_id, unix_seconds, value)
SampleRow = tuple[int, int, float, float]


@dataclass(frozen=True)
class StoreResult:
    received: int
    inserted: int

    @property
    def duplicates(self) -> int:
        return self.received - self.inserted


def _to_datetime(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def _dedupe(rows: Sequence[SampleRow]) -> list[SampleRow]:
    # Within one batch the last value for a point wins, like a Prometheus re-scrape.
    latest: dict[tuple[int, int, float], SampleRow] = {}
    for row in rows:
        latest[(row[0], row[1], row[2])] = row
    return list(latest.values())


def samples_write(rows: Sequence[SampleRow]) -> StoreResult:
    """Insert ``rows`` and update rollups; returns how many points were new."""
    if not rows:
        return StoreResult(received=0, inserted=0)
    unique_rows = _dedupe(rows)
    if connection.vendor == "postgresql":
        inserted = _write_postgresql(unique_rows)
    else:
        inserted = _write_generic(unique_rows)
    return StoreResult(received=len(rows), inserted=inserted)


_PG_STAGING = """
CREATE TEMP TABLE IF NOT EXISTS monitoring_sample_staging (
    metric_id integer, entity_id bigint, ts timestamptz, value double precision
) ON COMMIT DELETE ROWS
"""

_PG_MERGE = """
WITH inserted AS (
    INSERT INTO monitoring_sample (metric_id, entity_id, ts, value)
    SELECT metric_id, entity_id, ts, value FROM monitoring_sample_staging
    ORDER BY metric_id, entity_id, ts
    ON CONFLICT (metric_id, entity_id, ts) DO NOTHING
    RETURNING metric_id, entity_id, ts, value
), rolled AS (
    INSERT INTO monitoring_rollup (metric_id, entity_id, resolution, bucket, count, sum, min, max)
    SELECT i.metric_id, i.entity_id, r.res,
           to_timestamp(floor(extract(epoch FROM i.ts) / r.res) * r.res),
           count(*), sum(i.value), min(i.value), max(i.value)
    FROM inserted i CROSS JOIN (VALUES (60), (3600), (86400)) AS r(res)
    GROUP BY 1, 2, 3, 4
    ORDER BY 1, 2, 3, 4
    ON CONFLICT (metric_id, entity_id, resolution, bucket) DO UPDATE SET
        count = monitoring_rollup.count + EXCLUDED.count,
        sum = monitoring_rollup.sum + EXCLUDED.sum,
        min = LEAST(monitoring_rollup.min, EXCLUDED.min),
        max = GREATEST(monitoring_rollup.max, EXCLUDED.max)
)
SELECT count(*) FROM inserted
"""


def _write_postgresql(rows: list[SampleRow]) -> int:
    with connection.cursor() as cursor:
        cursor.execute(_PG_STAGING)
        # ON COMMIT DELETE ROWS empties it at commit; truncate too in case an earlier batch in
        # this same transaction left rows behind.
        cursor.execute("TRUNCATE monitoring_sample_staging")
        raw = cursor.cursor  # the psycopg cursor, for COPY
        with raw.copy(
            "COPY monitoring_sample_staging (metric_id, entity_id, ts, value) FROM STDIN"
        ) as copy:
            for metric_id, entity_id, seconds, value in rows:
                copy.write_row((metric_id, entity_id, _to_datetime(seconds), value))
        cursor.execute(_PG_MERGE)
        return int(cursor.fetchone()[0])


def _bucket(seconds: float, resolution: int) -> float:
    return math.floor(seconds / resolution) * resolution


def _existing_points(rows: list[SampleRow]) -> set[tuple[int, int, str]]:
    ops = connection.ops
    lo = ops.adapt_datetimefield_value(_to_datetime(min(r[2] for r in rows)))
    hi = ops.adapt_datetimefield_value(_to_datetime(max(r[2] for r in rows)))
    metric_ids = sorted({r[0] for r in rows})
    placeholders = ",".join(["%s"] * len(metric_ids))
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT metric_id, entity_id, ts FROM monitoring_sample "
            f"WHERE ts >= %s AND ts <= %s AND metric_id IN ({placeholders})",
            [lo, hi, *metric_ids],
        )
        return {(m, e, str(ts)) for m, e, ts in cursor.fetchall()}


def _write_generic(rows: list[SampleRow]) -> int:
    ops = connection.ops
    adapted = [(m, e, ops.adapt_datetimefield_value(_to_datetime(s)), v, s) for m, e, s, v in rows]
    existing = _existing_points(rows)
    new = [row for row in adapted if (row[0], row[1], str(row[2])) not in existing]
    if not new:
        return 0
    with connection.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO monitoring_sample (metric_id, entity_id, ts, value) VALUES (%s,%s,%s,%s)",
            [row[:4] for row in new],
        )
        aggregates: dict[tuple[int, int, int, float], list[float]] = defaultdict(
            lambda: [0, 0.0, math.inf, -math.inf]
        )
        for metric_id, entity_id, _, value, seconds in new:
            for resolution in ROLLUP_RESOLUTIONS:
                agg = aggregates[(metric_id, entity_id, resolution, _bucket(seconds, resolution))]
                agg[0] += 1
                agg[1] += value
                agg[2] = min(agg[2], value)
                agg[3] = max(agg[3], value)
        cursor.executemany(
            "INSERT INTO monitoring_rollup "
            "(metric_id, entity_id, resolution, bucket, count, sum, min, max) "
            "VALUES (%s,%s,%s,%s,%s,%s,%s,%s) "
            "ON CONFLICT (metric_id, entity_id, resolution, bucket) DO UPDATE SET "
            "count = monitoring_rollup.count + excluded.count, "
            "sum = monitoring_rollup.sum + excluded.sum, "
            "min = MIN(monitoring_rollup.min, excluded.min), "
            "max = MAX(monitoring_rollup.max, excluded.max)",
            [
                (m, e, r, ops.adapt_datetimefield_value(_to_datetime(b)), *agg)
                for (m, e, r, b), agg in sorted(aggregates.items())
            ],
        )
    return len(new)
