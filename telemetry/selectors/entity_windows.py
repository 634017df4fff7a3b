"""The raw values of one metric for one entity over a window, from rows and frames.

Gates need percentiles (p50/p95/p99), which rollups (count/sum/min/max) cannot give, so a
measurement reads raw values: ``Sample`` rows (exporters, JSON pushes, the twin's
cluster-wide scalars) and raw ``Frame`` arrays (the twin's per-workload metrics), each
entity's value cut out of the frame by the database. Raw data is kept at least six hours
(``TELEMETRY_RAW_ACCELERATOR_HOURS``), which bounds a criterion's window.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np
from django.db.models import BinaryField, F, Func, Value

from telemetry.frames import VALUE_DTYPE
from telemetry.models import Entity, Frame, MetricDefinition, Sample
from telemetry.selectors.frames import entity_positions


class MeasurementError(Exception):
    """The measurement could not be taken (unknown metric or entity): an Error outcome."""


@dataclass(frozen=True)
class WindowAggregate:
    value: float | None  # None: no data in the window
    samples: int


def _value_at(index: int) -> Func:
    width = np.dtype(VALUE_DTYPE).itemsize
    return Func(
        F("values"),
        Value(index * width + 1),
        Value(width),
        function="substr",
        output_field=BinaryField(),
    )


def window_raw_values(
    *,
    metric: str,
    cluster_id: int,
    entity_kind: str,
    entity_key: str,
    start: datetime,
    end: datetime,
) -> np.ndarray:
    """Every raw value of ``metric`` for the entity with ``start <= ts <= end``."""
    definition = MetricDefinition.objects.filter(name=metric).first()
    if definition is None:
        raise MeasurementError(f"unknown metric {metric!r}")
    entity = Entity.objects.filter(cluster_id=cluster_id, kind=entity_kind, key=entity_key).first()
    if entity is None:
        raise MeasurementError(f"no {entity_kind} {entity_key!r} on this cluster")
    values = list(
        Sample.objects.filter(
            metric=definition, entity=entity, ts__gte=start, ts__lte=end
        ).values_list("value", flat=True)
    )
    for layout, index in entity_positions(entity):
        cut = (
            Frame.objects.filter(
                metric=definition, layout=layout, resolution=0, ts__gte=start, ts__lte=end
            )
            .annotate(v=_value_at(index))
            .values_list("v", flat=True)
        )
        for raw in cut.iterator():
            values.append(float(np.frombuffer(bytes(raw), VALUE_DTYPE)[0]))
    array = np.asarray(values, dtype=np.float64)
    return array[np.isfinite(array)]  # NaN in a frame means "no value for this entity"


def aggregate(values: np.ndarray, aggregation: str) -> WindowAggregate:
    """``aggregation`` of ``values``; percentiles interpolate linearly between ranks."""
    if values.size == 0:
        return WindowAggregate(None, 0)
    if aggregation in ("p50", "p95", "p99"):
        result = float(np.percentile(values, float(aggregation[1:])))
    elif aggregation == "mean":
        result = float(values.mean())
    elif aggregation == "max":
        result = float(values.max())
    elif aggregation == "min":
        result = float(values.min())
    else:
        raise MeasurementError(f"unknown aggregation {aggregation!r}")
    return WindowAggregate(result, int(values.size))


def window_aggregate(
    *,
    metric: str,
    cluster_id: int,
    entity_kind: str,
    entity_key: str,
    aggregation: str,
    start: datetime,
    end: datetime,
) -> WindowAggregate:
    values = window_raw_values(
        metric=metric,
        cluster_id=cluster_id,
        entity_kind=entity_kind,
        entity_key=entity_key,
        start=start,
        end=end,
    )
    return aggregate(values, aggregation)
