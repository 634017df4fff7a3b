"""One metric of many entities over one range, in one grouped query per tier.

What :func:`telemetry.read.local.series.series_read` answers for each entity — the same
source choice, tiers, step and buckets — but a list of 10,000 cards costs a few queries, not
10,000 (the allocated-but-idle list reads every held card). Entities of clusters with dense
frames (the twin) and non-PostgreSQL databases are read one by one, as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db import connection

from telemetry.models import Entity, FrameLayout, MetricDefinition
from telemetry.read.local.series import (
    Series,
    SeriesPoint,
    choose_source,
    fold_grouped_tiers,
    series_read,
    utc_at,
)
from telemetry.store.samples import watermarks

_PG_RAW = """
SELECT entity_id, floor(date_part('epoch', ts) / %s) * %s AS k, count(*), sum(value),
       min(value), max(value)
FROM monitoring_sample
WHERE metric_id = %s AND entity_id = ANY(%s) AND ts >= %s AND ts < %s
GROUP BY entity_id, k
"""
_PG_ROLLUP = """
SELECT entity_id, floor(date_part('epoch', bucket) / %s) * %s AS k, sum(count), sum(sum),
       min(min), max(max)
FROM monitoring_rollup
WHERE metric_id = %s AND entity_id = ANY(%s) AND resolution = %s AND bucket >= %s
      AND bucket < %s
GROUP BY entity_id, k
"""


def series_read_entities(
    *, metric: MetricDefinition, entities: Iterable[Entity], start: datetime, end: datetime
) -> dict[int, Series]:
    """``{entity id: Series}`` of ``metric`` over ``[start, end)`` for every entity."""
    entities = list(entities)
    framed = set(
        FrameLayout.objects.filter(
            cluster_id__in={e.cluster_id for e in entities}, kind__in={e.kind for e in entities}
        ).values_list("cluster_id", "kind")
    )
    single = [e for e in entities if (e.cluster_id, e.kind) in framed]
    grouped = [e for e in entities if (e.cluster_id, e.kind) not in framed]
    if connection.vendor != "postgresql":
        single, grouped = entities, []
    found = {e.pk: series_read(metric=metric, entity=e, start=start, end=end) for e in single}
    if grouped:
        source, resolution, step = choose_source(start, end)
        buckets: dict[int, dict[int, list[float]]] = {e.pk: {} for e in grouped}
        ids = list(buckets)
        fold_grouped_tiers(
            (_PG_RAW, _PG_ROLLUP),
            (metric.pk, ids),
            start,
            end,
            resolution,
            step,
            buckets,
            watermarks(),
        )
        for entity in grouped:
            points = [
                SeriesPoint(
                    ts=utc_at(key),
                    mean=agg[1] / agg[0],
                    min=agg[2],
                    max=agg[3],
                    count=int(agg[0]),
                )  # fmt: skip
                for key, agg in sorted(buckets[entity.pk].items())
            ]
            found[entity.pk] = Series(metric.name, entity.key, source, step, points)
    return found
