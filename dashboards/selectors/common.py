"""Shared reads for the dashboards: which cluster, metric definitions, finite figures.

Telemetry itself is read through :mod:`telemetry.read`."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from inventory.models import Cluster
from inventory.selectors import default_cluster
from telemetry.models import MetricDefinition
from telemetry.read import metrics_by_name


def clusters() -> list[Cluster]:
    return list(Cluster.objects.order_by("name"))


def cluster_pick(name: str | None) -> Cluster | None:
    """The named cluster, else the default unified one (an operator-marked default first, else
    the first by name), else any default; ``None`` if unknown."""
    if name:
        return Cluster.objects.filter(name=name).first()
    return default_cluster(unified=True) or default_cluster(unified=None)


def metric_defs(names: Iterable[str]) -> dict[str, MetricDefinition]:
    return metrics_by_name(names)


def finite(value: float | None) -> float | None:
    """``None`` for missing/NaN, else the float (what tables and KPI tiles show)."""
    if value is None:
        return None
    value = float(value)
    return None if np.isnan(value) or np.isinf(value) else value
