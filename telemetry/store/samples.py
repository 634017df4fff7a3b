"""Writing samples exactly once per (metric, entity, time, source); rollups follow by compaction.

Ingestion is a plain insert — on PostgreSQL a COPY into a temporary staging table, then one
``INSERT … ON CONFLICT DO NOTHING`` — so its cost stays close to a raw COPY. Rollups (1 min,
15 min, 1 h, 1 day; count/sum/min/max) are built by :mod:`telemetry.store.compaction` up to a
watermark per resolution. A sample that arrives for a bucket already compacted (late data)
is folded into that bucket here, in the same statement, so rollups never miss it and never
count a replay: only rows that were really inserted reach them.

Each writer (``provenance``) has its own slot per point: a value another source stored first
never hides this one's (issue 31 §4), and gates pick the sources they trust at read time.

Callers own the transaction (``transaction.atomic``). Ingestion holds a shared advisory lock
and compaction an exclusive one, so a watermark never moves past a sample that is still being
written.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from django.db import connection, transaction

from telemetry.store.counters import SAMPLES_STORED, counter_add

ROLLUP_RESOLUTIONS: tuple[int, ...] = (60, 900, 3600, 86400)
ADVISORY_LOCK_KEY = 0x524F4C4C  # "ROLL": shared by ingestion, exclusive for compaction

# (metric_id, entity_id, unix_seconds, value)
SampleRow = tuple[int, int, float, float]


@dataclass(frozen=True)
class StoreResult:
    received: int
    inserted: int

    @property
    def duplicates(self) -> int:
        return self.received - self.inserted


def to_datetime(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def bucket_start(seconds: float, resolution: int) -> float:
    return math.floor(seconds / resolution) * resolution


def watermarks() -> dict[int, datetime]:
    from telemetry.models import RollupWatermark

    return dict(RollupWatermark.objects.values_list("resolution", "complete_until"))


def _dedupe(rows: Sequence[SampleRow]) -> list[SampleRow]:
    # Within one batch the last value for a point wins, like a Prometheus re-scrape.
    latest: dict[tuple[int, int, float], SampleRow] = {}
    for row in rows:
        latest[(row[0], row[1], row[2])] = row
    return list(latest.values())


class StaleReference(Exception):
    """A batch written with ``check_now`` names a metric or entity that no longer exists
    (a memoised id whose row was deleted since): nothing of it is kept; the caller resolves
    its ids again and retries (``telemetry.ingest.pipeline``)."""


def samples_write(
    rows: Sequence[SampleRow], *, provenance: int | None = None, check_now: bool = False
) -> StoreResult:
    """Insert ``rows`` (late ones also into compacted rollups); returns how many were new.

    The sample table has no foreign-key constraints on ``metric`` and ``entity`` (a check and
    a key-share lock on the entity per inserted row more than doubled the insert's cost, and
    concurrent shards share those locks: BENCHMARKS.md); ids come from the registry in the
    same transaction or, for ``check_now`` writers, from a memo (``telemetry.catalogue.known``).
    ``check_now`` makes the insert itself check that every row's metric and entity exist (an
    anti-join, no locks) and raise :class:`StaleReference` if any does not, so a memo holding
    a deleted id is caught and the caller can retry in its savepoint. Deleting an entity or
    metric deletes its samples through Django's cascade; a sample written while its entity is
    being deleted can outlive it — no read joins it to anything, and retention removes it.

    ``provenance`` is the :class:`~telemetry.models.SampleSource` id of whoever wrote the
    batch (``telemetry.store.provenance``): one value for the whole batch, set in the insert itself,
    so tagging costs no per-row work. ``None`` marks the rows as of unknown origin, which no
    gate trusts.
    """
    if not rows:
        return StoreResult(received=0, inserted=0)
    unique_rows = _dedupe(rows)
    # The running total is added in the rows' own transaction (``portal_samples_stored_total``).
    with transaction.atomic():
        if connection.vendor == "postgresql":
            inserted = _write_postgresql(unique_rows, provenance, check_now=check_now)
        else:
            if check_now:
                _check_references(unique_rows)
            inserted = _write_generic(unique_rows, watermarks(), provenance)
        counter_add(SAMPLES_STORED, inserted)
    return StoreResult(received=len(rows), inserted=inserted)


def _check_references(rows: list[SampleRow]) -> None:
    """Raise :class:`StaleReference` if a row's metric or entity does not exist (SQLite; on
    PostgreSQL the merge checks it). Two counts by primary key, no model instances."""
    metric_ids = sorted({r[0] for r in rows})
    entity_ids = sorted({r[1] for r in rows})
    with connection.cursor() as cursor:
        for table, ids in (
            ("monitoring_metricdefinition", metric_ids),
            ("monitoring_entity", entity_ids),
        ):
            for start in range(0, len(ids), 900):  # SQLite's bound-parameter limit
                chunk = ids[start : start + 900]
                marks = ",".join(["%s"] * len(chunk))
                cursor.execute(f"SELECT count(*) FROM {table} WHERE id IN ({marks})", chunk)
                if cursor.fetchone()[0] != len(chunk):
                    raise StaleReference("a sample names a metric or entity that no longer exists")


# The staging table holds a batch as COPY sent it (time as unix seconds, converted in the
# insert); the merge empties it in the same statement (``DELETE … RETURNING``), so a second
# batch in one transaction starts from an empty table without a TRUNCATE per batch.
_PG_PREPARE = """
SELECT pg_advisory_xact_lock_shared({lock});
CREATE TEMP TABLE IF NOT EXISTS monitoring_sample_staging_s (
    metric_id integer, entity_id bigint, ts double precision, value double precision
) ON COMMIT DELETE ROWS;
"""

# ``check_now``: the rows whose metric or entity is gone are not inserted but counted.
_PG_CHECKED = """
, orphans AS (
    SELECT count(*) AS n FROM staged s
    WHERE NOT EXISTS (SELECT 1 FROM monitoring_entity e WHERE e.id = s.entity_id)
       OR NOT EXISTS (SELECT 1 FROM monitoring_metricdefinition d WHERE d.id = s.metric_id)
)"""
_PG_CHECKED_WHERE = """
    WHERE EXISTS (SELECT 1 FROM monitoring_entity e WHERE e.id = staged.entity_id)
      AND EXISTS (SELECT 1 FROM monitoring_metricdefinition d WHERE d.id = staged.metric_id)"""

# Watermarks are read in the merge itself, after the shared lock: compaction (exclusive) cannot
# move one between reading it and inserting below it.
_PG_MERGE = """
WITH staged AS (
    DELETE FROM monitoring_sample_staging_s RETURNING metric_id, entity_id, ts, value
){checked}, inserted AS (
    INSERT INTO monitoring_sample (metric_id, entity_id, ts, value, source_id)
    SELECT metric_id, entity_id, to_timestamp(ts), value, %s::integer FROM staged{where}
    ORDER BY metric_id, entity_id, ts
    ON CONFLICT (metric_id, entity_id, ts, COALESCE(source_id, 0)) DO NOTHING
    RETURNING metric_id, entity_id, ts, value
), marks AS (
    SELECT r.res, COALESCE(w.complete_until, 'epoch'::timestamptz) AS complete_until
    FROM (VALUES (60), (900), (3600), (86400)) AS r(res)
    LEFT JOIN monitoring_rollupwatermark w ON w.resolution = r.res
), late AS (
    SELECT i.metric_id, i.entity_id, i.value, r.res,
           to_timestamp(floor(extract(epoch FROM i.ts) / r.res) * r.res) AS bucket
    FROM inserted i
    CROSS JOIN marks r
    -- A bucket starts at most one resolution before its point: the timestamp test drops the
    -- points that cannot be late before the (numeric) bucket is computed for the rest.
    WHERE i.ts < r.complete_until + make_interval(secs => r.res)
      AND to_timestamp(floor(extract(epoch FROM i.ts) / r.res) * r.res) < r.complete_until
), rolled AS (
    INSERT INTO monitoring_rollup (metric_id, entity_id, resolution, bucket, count, sum, min, max)
    SELECT metric_id, entity_id, res, bucket, count(*), sum(value), min(value), max(value)
    FROM late GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
    ON CONFLICT (metric_id, entity_id, resolution, bucket) DO UPDATE SET
        count = monitoring_rollup.count + EXCLUDED.count,
        sum = monitoring_rollup.sum + EXCLUDED.sum,
        min = LEAST(monitoring_rollup.min, EXCLUDED.min),
        max = GREATEST(monitoring_rollup.max, EXCLUDED.max)
)
SELECT (SELECT count(*) FROM inserted), {orphans}
"""
_MERGE_PLAIN = _PG_MERGE.format(checked="", where="", orphans="0")
_MERGE_CHECKED = _PG_MERGE.format(
    checked=_PG_CHECKED, where=_PG_CHECKED_WHERE, orphans="(SELECT n FROM orphans)"
)


def _write_postgresql(rows: list[SampleRow], provenance: int | None, *, check_now: bool) -> int:
    # One COPY of tab-separated text built in one join: the per-row cost is a format, not a
    # datetime and a row adapter. ``repr`` of a float reads back exactly.
    data = "".join(f"{m}\t{e}\t{t!r}\t{v!r}\n" for m, e, t, v in rows)
    with connection.cursor() as cursor:
        cursor.execute(_PG_PREPARE.format(lock=ADVISORY_LOCK_KEY))
        with cursor.cursor.copy(
            "COPY monitoring_sample_staging_s (metric_id, entity_id, ts, value) FROM STDIN"
        ) as copy:
            copy.write(data)
        cursor.execute(_MERGE_CHECKED if check_now else _MERGE_PLAIN, [provenance])
        inserted, orphans = cursor.fetchone()
    if orphans:
        raise StaleReference(f"{orphans} samples name a metric or entity that no longer exists")
    return int(inserted)


def _existing_points(rows: list[SampleRow], provenance: int | None) -> set[tuple[int, int, str]]:
    """The batch's points this writer already stored (each source has its own slot)."""
    ops = connection.ops
    lo = ops.adapt_datetimefield_value(to_datetime(min(r[2] for r in rows)))
    hi = ops.adapt_datetimefield_value(to_datetime(max(r[2] for r in rows)))
    metric_ids = sorted({r[0] for r in rows})
    placeholders = ",".join(["%s"] * len(metric_ids))
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT metric_id, entity_id, ts FROM monitoring_sample "
            f"WHERE ts >= %s AND ts <= %s AND metric_id IN ({placeholders}) "
            "AND COALESCE(source_id, 0) = %s",
            [lo, hi, *metric_ids, provenance or 0],
        )
        return {(m, e, str(ts)) for m, e, ts in cursor.fetchall()}


def rollups_add(aggregates: dict[tuple[int, int, int, float], list[float]]) -> None:
    """Upsert ``{(metric, entity, resolution, bucket seconds): [count, sum, min, max]}``."""
    if not aggregates:
        return
    ops = connection.ops
    least, greatest = ("LEAST", "GREATEST") if connection.vendor == "postgresql" else ("MIN", "MAX")
    with connection.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO monitoring_rollup "
            "(metric_id, entity_id, resolution, bucket, count, sum, min, max) "
            "VALUES (%s,%s,%s,%s,%s,%s,%s,%s) "
            "ON CONFLICT (metric_id, entity_id, resolution, bucket) DO UPDATE SET "
            "count = monitoring_rollup.count + excluded.count, "
            "sum = monitoring_rollup.sum + excluded.sum, "
            f"min = {least}(monitoring_rollup.min, excluded.min), "
            f"max = {greatest}(monitoring_rollup.max, excluded.max)",
            [
                (m, e, r, ops.adapt_datetimefield_value(to_datetime(b)), *agg)
                for (m, e, r, b), agg in sorted(aggregates.items())
            ],
        )


def aggregate_into(
    aggregates: dict,
    metric_id: int,
    entity_id: int,
    resolution: int,
    bucket: float,
    count: int,
    total: float,
    low: float,
    high: float,
) -> None:
    agg = aggregates.setdefault(
        (metric_id, entity_id, resolution, bucket), [0, 0.0, math.inf, -math.inf]
    )
    agg[0] += count
    agg[1] += total
    agg[2] = min(agg[2], low)
    agg[3] = max(agg[3], high)


def _write_generic(
    rows: list[SampleRow], marks: dict[int, datetime], provenance: int | None
) -> int:
    ops = connection.ops
    existing = _existing_points(rows, provenance)
    new = [
        (m, e, ops.adapt_datetimefield_value(to_datetime(s)), v, s)
        for m, e, s, v in rows
        if (m, e, str(ops.adapt_datetimefield_value(to_datetime(s)))) not in existing
    ]
    if not new:
        return 0
    with connection.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO monitoring_sample (metric_id, entity_id, ts, value, source_id) "
            "VALUES (%s,%s,%s,%s,%s)",
            [(*row[:4], provenance) for row in new],
        )
    late: dict = {}
    limits = {r: marks[r].timestamp() for r in ROLLUP_RESOLUTIONS if r in marks}
    for metric_id, entity_id, _, value, seconds in new:
        for resolution, limit in limits.items():
            bucket = bucket_start(seconds, resolution)
            if bucket < limit:
                aggregate_into(
                    late, metric_id, entity_id, resolution, bucket, 1, value, value, value
                )
    rollups_add(late)
    return len(new)


def group_rows(rows, resolution: int) -> dict:
    """Aggregate ``(metric, entity, seconds, count, sum, min, max)`` rows into buckets."""
    out: dict = defaultdict(lambda: [0, 0.0, math.inf, -math.inf])
    for metric_id, entity_id, seconds, count, total, low, high in rows:
        aggregate_into(
            out,
            metric_id,
            entity_id,
            resolution,
            bucket_start(seconds, resolution),
            count,
            total,
            low,
            high,
        )
    return dict(out)
