"""An aggregate per entity of one kind over a window, from both shapes of the store.

Alert rules read through this (an ``AlertRule`` is a :class:`KindWindow`).

Sparse sources (exporters, JSON pushes, cluster-wide twin scalars such as tick lag) are rows:
``Sample`` and ``Rollup``. The twin's per-entity metrics (cards, links, nodes, pools,
workloads) are dense ``Frame`` arrays. Rules must not care which path wrote a value, so each
source yields a partial aggregate per entity and the two are merged:

- ``mean``: (sum, count), added up;
- ``max`` / ``min``: the extreme;
- ``last``: (time, value) of the newest raw value; the newer one wins.

The window is ``[now - window, now]``. ``mean``/``max``/``min`` widen its start to the whole
minute (``floor_minute(now - window)``) and read minute rollups where they are complete: for
rows, rollups are compacted up to a watermark that lags real time
(:mod:`telemetry.store.compaction`), so the part after the watermark is aggregated from
raw samples; frames keep their minute rollups current as they are written. An entity with no
value in the window is absent from the result: "no data", which the evaluator treats as
"change nothing".

Queries: rows take two grouped queries (rollups, raw tail) or one for ``last``; frames one
query for ``mean/max/min`` and, for ``last``, one per frame layout holding data in the window
(a layout is one cluster's entities of one kind), reading newest frames first and stopping
once every entity has a value.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

import numpy as np
from django.db.models import Count, F, Max, Min, Sum, Window
from django.db.models.functions import RowNumber

from telemetry.models import Entity, Frame, FrameLayout, MetricDefinition, Rollup, Sample
from telemetry.store.frame_codec import frame_array
from telemetry.store.frames import COUNT_DTYPE, SUM_DTYPE, VALUE_DTYPE, layout_entity_ids
from telemetry.store.samples import watermarks

ROLLUP_RESOLUTION = 60
LABEL_CHUNK = 5000  # bounds one ``IN (...)`` list when looking up entity keys


class Agg:
    """The window aggregations (the values of ``AlertRule.Aggregation``)."""

    MEAN = "mean"
    MAX = "max"
    MIN = "min"
    LAST = "last"


class KindWindow(Protocol):
    """What to aggregate: every entity of ``entity_kind`` over the last ``window_seconds``."""

    entity_kind: str
    aggregation: str
    window_seconds: int


# mean: (sum, count); max/min: (value, 0); last: (unix time, value)
Partial = tuple[float, float]


@dataclass
class WindowValues:
    """Aggregates per entity id, and ``(key, tenant_id)`` of the entities already known."""

    values: dict[int, float] = field(default_factory=dict)
    labels: dict[int, tuple[str, int | None]] = field(default_factory=dict)


def window_values(*, rule: KindWindow, metric: MetricDefinition, now: datetime) -> WindowValues:
    """The aggregate for every entity of ``rule.entity_kind`` with data in the window."""
    start = now - timedelta(seconds=rule.window_seconds)
    first_bucket = start.replace(second=0, microsecond=0)
    result = WindowValues()
    partials = _row_partials(rule, metric, start, first_bucket, now, result.labels)
    for entity_id, partial in _frame_partials(rule, metric, start, first_bucket, now).items():
        mine = partials.get(entity_id)
        partials[entity_id] = partial if mine is None else _merge(rule.aggregation, mine, partial)
    for entity_id, partial in partials.items():
        value = partial[0] / partial[1] if rule.aggregation == Agg.MEAN else partial[0]
        if rule.aggregation == Agg.LAST:
            value = partial[1]
        # A non-finite aggregate cannot be compared or stored as JSON: treat it as no data.
        if math.isfinite(value):
            result.values[entity_id] = float(value)
    return result


def entity_labels(entity_ids: Iterable[int]) -> dict[int, tuple[str, int | None]]:
    """``{entity_id: (key, tenant_id)}``; called only for entities about to fire."""
    ids = sorted(set(entity_ids))
    labels: dict[int, tuple[str, int | None]] = {}
    for i in range(0, len(ids), LABEL_CHUNK):
        rows = Entity.objects.filter(pk__in=ids[i : i + LABEL_CHUNK]).values_list(
            "id", "key", "tenant_id"
        )
        labels.update({entity_id: (key, tenant) for entity_id, key, tenant in rows})
    return labels


def _merge(aggregation: str, a: Partial, b: Partial) -> Partial:
    if aggregation == Agg.MEAN:
        return (a[0] + b[0], a[1] + b[1])
    if aggregation == Agg.MAX:
        return a if a[0] >= b[0] else b
    if aggregation == Agg.MIN:
        return a if a[0] <= b[0] else b
    return a if a[0] >= b[0] else b  # last: the newer one


def _row_partials(
    rule: KindWindow,
    metric: MetricDefinition,
    start: datetime,
    first_bucket: datetime,
    now: datetime,
    labels: dict[int, tuple[str, int | None]],
) -> dict[int, Partial]:
    kind = rule.entity_kind
    if rule.aggregation == Agg.LAST:
        rows = (
            Sample.objects.filter(metric=metric, entity__kind=kind, ts__gte=start, ts__lte=now)
            .annotate(
                newest=Window(RowNumber(), partition_by=[F("entity_id")], order_by=F("ts").desc())
            )
            .filter(newest=1)
            .values_list("entity_id", "entity__key", "entity__tenant_id", "ts", "value")
        )
        partials = {}
        for entity_id, key, tenant_id, ts, value in rows:
            labels[entity_id] = (key, tenant_id)
            partials[entity_id] = (ts.timestamp(), value)
        return partials
    # Minute rollups are built by compaction up to a watermark that lags real time; the rest
    # of the window (usually the newest minute or two) comes from raw samples.
    complete = watermarks().get(ROLLUP_RESOLUTION)
    raw_from = max(first_bucket, complete) if complete else first_bucket
    partials: dict[int, Partial] = {}
    sources = []
    if complete and complete > first_bucket:
        rollups = Rollup.objects.filter(
            metric=metric,
            entity__kind=kind,
            resolution=ROLLUP_RESOLUTION,
            bucket__gte=first_bucket,
            bucket__lt=complete,
            bucket__lte=now,
        ).values("entity_id", "entity__key", "entity__tenant_id")
        sources.append(rollups.annotate(**_ROLLUP_AGGREGATES[rule.aggregation]))
    raw = Sample.objects.filter(
        metric=metric, entity__kind=kind, ts__gte=raw_from, ts__lte=now
    ).values("entity_id", "entity__key", "entity__tenant_id")
    sources.append(raw.annotate(**_RAW_AGGREGATES[rule.aggregation]))
    for grouped in sources:
        for row in grouped:
            if not row["b"]:
                continue
            entity_id = row["entity_id"]
            labels[entity_id] = (row["entity__key"], row["entity__tenant_id"])
            partial = (row["a"], row["b"])
            mine = partials.get(entity_id)
            partials[entity_id] = (
                partial if mine is None else _merge(rule.aggregation, mine, partial)
            )
    return partials


# a: the aggregate (sum for mean), b: the count of values behind it.
_ROLLUP_AGGREGATES = {
    Agg.MEAN: {"a": Sum("sum"), "b": Sum("count")},
    Agg.MAX: {"a": Max("max"), "b": Sum("count")},
    Agg.MIN: {"a": Min("min"), "b": Sum("count")},
}
_RAW_AGGREGATES = {
    Agg.MEAN: {"a": Sum("value"), "b": Count("id")},
    Agg.MAX: {"a": Max("value"), "b": Count("id")},
    Agg.MIN: {"a": Min("value"), "b": Count("id")},
}


def _frame_partials(
    rule: KindWindow,
    metric: MetricDefinition,
    start: datetime,
    first_bucket: datetime,
    now: datetime,
) -> dict[int, Partial]:
    if rule.aggregation == Agg.LAST:
        return _frame_last(rule, metric, start, now)
    frames = Frame.objects.filter(
        metric=metric,
        layout__kind=rule.entity_kind,
        resolution=ROLLUP_RESOLUTION,
        ts__gte=first_bucket,
        ts__lte=now,
    )
    # Per layout: [sum, count] for mean, the running extreme for max/min (NaN = no value).
    acc: dict[int, list[np.ndarray]] = {}
    if rule.aggregation == Agg.MEAN:
        for layout_id, c, s in frames.values_list("layout_id", "count", "sum").iterator(
            chunk_size=16
        ):
            count = frame_array(c, COUNT_DTYPE).astype(np.int64)
            total = frame_array(s, SUM_DTYPE)
            if layout_id in acc:
                acc[layout_id][0] = acc[layout_id][0] + total
                acc[layout_id][1] = acc[layout_id][1] + count
            else:
                acc[layout_id] = [total.copy(), count]
    else:
        column, fold = ("max", np.fmax) if rule.aggregation == Agg.MAX else ("min", np.fmin)
        for layout_id, raw in frames.values_list("layout_id", column).iterator(chunk_size=16):
            array = frame_array(raw, VALUE_DTYPE).astype(np.float64)
            acc[layout_id] = [fold(acc[layout_id][0], array) if layout_id in acc else array]
    partials: dict[int, Partial] = {}
    for layout in FrameLayout.objects.filter(pk__in=list(acc)).only("entity_ids"):
        ids = layout_entity_ids(layout)
        arrays = acc[layout.pk]
        present = arrays[1] > 0 if rule.aggregation == Agg.MEAN else ~np.isnan(arrays[0])
        second = arrays[1] if rule.aggregation == Agg.MEAN else np.zeros(ids.size)
        for position in np.nonzero(present)[0]:
            partials[int(ids[position])] = (float(arrays[0][position]), float(second[position]))
    return partials


def _frame_last(
    rule: KindWindow, metric: MetricDefinition, start: datetime, now: datetime
) -> dict[int, Partial]:
    raw = Frame.objects.filter(metric=metric, resolution=0, ts__gte=start, ts__lte=now)
    layout_ids = raw.filter(layout__kind=rule.entity_kind).values_list("layout_id", flat=True)
    partials: dict[int, Partial] = {}
    for layout in FrameLayout.objects.filter(pk__in=layout_ids.distinct()).only("entity_ids"):
        ids = layout_entity_ids(layout)
        values = np.full(ids.size, np.nan)
        times = np.full(ids.size, np.nan)
        newest_first = raw.filter(layout=layout).order_by("-ts").values_list("ts", "values")
        for ts, blob in newest_first.iterator(chunk_size=4):
            array = frame_array(blob, VALUE_DTYPE)
            fill = np.isnan(values) & ~np.isnan(array)
            values[fill] = array[fill]
            times[fill] = ts.timestamp()
            if not np.isnan(values).any():
                break  # usually after the newest frame: every entity has its last value
        for position in np.nonzero(~np.isnan(values))[0]:
            partials[int(ids[position])] = (float(times[position]), float(values[position]))
    return partials
