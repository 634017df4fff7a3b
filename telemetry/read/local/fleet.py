"""Per-bucket aggregates of card samples over a cluster, for derived fleet figures
(``telemetry.read.fleet``): one grouped query per stored tier, whatever the fleet size.

Each card's mean in a bucket is taken first (a card scraped four times in a bucket counts
once), then the cards are summed and counted in the database: the answer is one row per
(bucket, metric), not one per card.
"""

from __future__ import annotations

from datetime import datetime

from django.db import connection

from telemetry.models import MetricDefinition
from telemetry.read.fleet import CardAgg, CardBuckets
from telemetry.read.local.series import FINER, choose_source
from telemetry.store.samples import watermarks

# A health mean of exactly 1 in the bucket: healthy throughout it.
_PG_RAW = """
SELECT k, metric_id, count(*), sum(card), count(*) FILTER (WHERE card >= 0.999999) FROM (
    SELECT floor(date_part('epoch', s.ts) / %(step)s) * %(step)s AS k, s.metric_id,
           s.entity_id, avg(s.value) AS card
    FROM monitoring_sample s JOIN monitoring_entity e ON e.id = s.entity_id
    WHERE s.metric_id = ANY(%(metrics)s) AND e.cluster_id = %(cluster)s
          AND e.kind = 'accelerator' AND s.ts >= %(start)s AND s.ts < %(end)s
    GROUP BY 1, 2, 3
) AS per_card GROUP BY 1, 2
"""
_PG_ROLLUP = """
SELECT k, metric_id, count(*), sum(card), count(*) FILTER (WHERE card >= 0.999999) FROM (
    SELECT floor(date_part('epoch', r.bucket) / %(step)s) * %(step)s AS k, r.metric_id,
           r.entity_id, sum(r.sum) / nullif(sum(r.count), 0) AS card
    FROM monitoring_rollup r JOIN monitoring_entity e ON e.id = r.entity_id
    WHERE r.metric_id = ANY(%(metrics)s) AND e.cluster_id = %(cluster)s
          AND e.kind = 'accelerator' AND r.resolution = %(resolution)s
          AND r.bucket >= %(start)s AND r.bucket < %(end)s
    GROUP BY 1, 2, 3
) AS per_card WHERE card IS NOT NULL GROUP BY 1, 2
"""

# The same on SQLite (the demo): epoch seconds from the stored text, IN for ANY, CASE for
# FILTER. Metric ids are the catalogue's integers, inlined.
_SQLITE_RAW = """
SELECT k, metric_id, count(*), sum(card), sum(CASE WHEN card >= 0.999999 THEN 1 ELSE 0 END)
FROM (
    SELECT (CAST(strftime('%%s', s.ts) AS INTEGER) / %(step)s) * %(step)s AS k, s.metric_id,
           s.entity_id, avg(s.value) AS card
    FROM monitoring_sample s JOIN monitoring_entity e ON e.id = s.entity_id
    WHERE s.metric_id IN ({ids}) AND e.cluster_id = %(cluster)s
          AND e.kind = 'accelerator' AND s.ts >= %(start)s AND s.ts < %(end)s
    GROUP BY 1, 2, 3
) AS per_card GROUP BY 1, 2
"""
_SQLITE_ROLLUP = """
SELECT k, metric_id, count(*), sum(card), sum(CASE WHEN card >= 0.999999 THEN 1 ELSE 0 END)
FROM (
    SELECT (CAST(strftime('%%s', r.bucket) AS INTEGER) / %(step)s) * %(step)s AS k,
           r.metric_id, r.entity_id, sum(r.sum) / nullif(sum(r.count), 0) AS card
    FROM monitoring_rollup r JOIN monitoring_entity e ON e.id = r.entity_id
    WHERE r.metric_id IN ({ids}) AND e.cluster_id = %(cluster)s
          AND e.kind = 'accelerator' AND r.resolution = %(resolution)s
          AND r.bucket >= %(start)s AND r.bucket < %(end)s
    GROUP BY 1, 2, 3
) AS per_card WHERE card IS NOT NULL GROUP BY 1, 2
"""


def _queries(metric_ids: list[int]) -> tuple[str, str]:
    if connection.vendor == "postgresql":
        return _PG_RAW, _PG_ROLLUP
    ids = ", ".join(str(int(pk)) for pk in metric_ids)
    return _SQLITE_RAW.format(ids=ids), _SQLITE_ROLLUP.format(ids=ids)


def card_buckets(
    *,
    cluster_id: int,
    names: list[str],
    start: datetime,
    end: datetime,
    hour_aligned: bool = False,
) -> tuple[int, CardBuckets]:
    """``(step, buckets)`` of the cluster's cards for ``names`` over the window, at the
    resolution a range read would choose (rollups up to their watermark, then finer tiers,
    raw samples last). PostgreSQL, and SQLite for the demo."""
    _, resolution, step = choose_source(start, end, hour_aligned=hour_aligned)
    buckets: CardBuckets = {}
    metrics = dict(MetricDefinition.objects.filter(name__in=names).values_list("pk", "name"))
    if not metrics or connection.vendor not in ("postgresql", "sqlite"):
        return step, buckets
    raw_sql, rollup_sql = _queries(list(metrics))
    marks = watermarks()
    params = {"step": step, "cluster": cluster_id}
    if connection.vendor == "postgresql":
        # SQLite's queries inline the ids (IN); an unused list there is still bound and
        # refused ("type 'list' is not supported"), which broke the demo's ledger closing.
        params["metrics"] = list(metrics)
    with connection.cursor() as cursor:
        while start < end:
            if resolution == 0:
                cursor.execute(raw_sql, {**params, "start": start, "end": end})
                upto = end
            else:
                complete = marks.get(resolution)
                upto = min(end, complete) if complete else start
                if upto > start:
                    where = {"resolution": resolution, "start": start, "end": upto}
                    cursor.execute(rollup_sql, {**params, **where})
            if resolution == 0 or upto > start:
                tier: CardBuckets = {}
                for at, metric_id, cards, total, ones in cursor.fetchall():
                    tier.setdefault(int(at), {})[metrics[metric_id]] = CardAgg(
                        int(cards), float(total or 0.0), int(ones)
                    )
                # A plotted bucket straddling two tiers would count its cards twice: keep
                # the tier that saw more of them.
                for at, per in tier.items():
                    mine = buckets.setdefault(at, {})
                    for name, agg in per.items():
                        if name not in mine or agg.cards > mine[name].cards:
                            mine[name] = agg
            if resolution == 0:
                break
            start, resolution = max(start, upto), FINER[resolution]
    return step, buckets
