"""The raw values of one metric for one entity over a window, from rows and frames.

Gates need percentiles (p50/p95/p99), which rollups (count/sum/min/max) cannot give, so a
measurement reads raw values: ``Sample`` rows (exporters, JSON pushes, the twin's
cluster-wide scalars) and raw ``Frame`` arrays (the twin's per-workload metrics), each
entity's value cut out of the frame by the database. Raw data is kept at least six hours
(``TELEMETRY_RAW_ACCELERATOR_HOURS``), which bounds a criterion's window.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from django.db.models import Func

from telemetry.models import Entity, Frame, MetricDefinition, Sample
from telemetry.read.local.frames import entity_positions
from telemetry.store.frame_codec import entity_cut, frame_value
from telemetry.store.frames import VALUE_DTYPE
from telemetry.store.provenance import Trust, counts_by_label


class MeasurementError(Exception):
    """The measurement could not be taken (unknown metric or entity): an Error outcome."""


@dataclass(frozen=True)
class WindowAggregate:
    """A window's aggregate over the values counted, and where they came from.

    ``sources`` counts the values measured per source label; ``ignored`` the values in the
    window from sources the measurement does not trust (they are never part of ``value``).
    """

    value: float | None  # None: no (trusted) data in the window
    samples: int
    sources: dict[str, int] = field(default_factory=dict)
    ignored: dict[str, int] = field(default_factory=dict)


def _value_at(index: int, size: int) -> Func:
    return entity_cut("values", index, np.dtype(VALUE_DTYPE).itemsize, size)


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
    return window_raw_evidence(
        metric=metric,
        cluster_id=cluster_id,
        entity_kind=entity_kind,
        entity_key=entity_key,
        start=start,
        end=end,
    )[0]


def window_raw_evidence(
    *,
    metric: str,
    cluster_id: int,
    entity_kind: str,
    entity_key: str,
    start: datetime,
    end: datetime,
) -> tuple[np.ndarray, list[int | None]]:
    """The window's finite raw values and, aligned with them, the source id of each."""
    definition = MetricDefinition.objects.filter(name=metric).first()
    if definition is None:
        raise MeasurementError(f"unknown metric {metric!r}")
    entity = Entity.objects.filter(cluster_id=cluster_id, kind=entity_kind, key=entity_key).first()
    if entity is None:
        raise MeasurementError(f"no {entity_kind} {entity_key!r} on this cluster")
    rows = list(
        Sample.objects.filter(
            metric=definition, entity=entity, ts__gte=start, ts__lte=end
        ).values_list("value", "source_id")
    )
    for layout, index in entity_positions(entity):
        cut = (
            Frame.objects.filter(
                metric=definition, layout=layout, resolution=0, ts__gte=start, ts__lte=end
            )
            .annotate(v=_value_at(index, layout.size))
            .values_list("v", "source_id")
        )
        for raw, source in cut.iterator():
            rows.append((float(frame_value(raw, VALUE_DTYPE, index)), source))
    array = np.asarray([value for value, _ in rows], dtype=np.float64)
    finite = np.isfinite(array)  # NaN in a frame means "no value for this entity"
    return array[finite], [source for (_, source), ok in zip(rows, finite, strict=True) if ok]


def aggregate_trusted(
    values: np.ndarray, sources: list[int | None], aggregation: str, trust: Trust
) -> WindowAggregate:
    """``aggregation`` over the values whose source ``trust`` names, with counts per source."""
    keep = np.fromiter((s in trust.source_ids for s in sources), dtype=bool, count=len(sources))
    counted = Counter(s for s, ok in zip(sources, keep, strict=True) if ok)
    dropped = Counter(s for s, ok in zip(sources, keep, strict=True) if not ok)
    result = aggregate(values[keep], aggregation)
    return WindowAggregate(
        result.value,
        result.samples,
        sources=counts_by_label(counted),
        ignored=counts_by_label(dropped),
    )


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
    trust: Trust | None = None,
) -> WindowAggregate:
    """The window's aggregate; with ``trust``, over the trusted sources' values only."""
    values, sources = window_raw_evidence(
        metric=metric,
        cluster_id=cluster_id,
        entity_kind=entity_kind,
        entity_key=entity_key,
        start=start,
        end=end,
    )
    if trust is None:
        return aggregate(values, aggregation)
    return aggregate_trusted(values, sources, aggregation, trust)
