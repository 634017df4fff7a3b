"""Shared reads for the dashboards: which cluster, metric definitions, finite figures.

Telemetry itself is read through :mod:`telemetry.read`."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from cluster_portal.web.caching import shared_read
from inventory.models import Cluster
from inventory.selectors import default_cluster
from telemetry.models import MetricDefinition
from telemetry.read import KindSnapshot, latest_kind, metrics_by_name


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


def latest_snapshot(cluster_id: int, kind: str, names: Iterable[str]) -> KindSnapshot:
    """:func:`telemetry.read.latest_kind`, shared for ``DASHBOARD_CACHE_SECONDS`` by every
    page and every time range that shows it (see ``cluster_portal.web.caching.shared_read``).

    The newest values do not depend on the range a reader picked, so a reader choosing custom
    ranges (whose payloads are never shared) still reads the fleet snapshot once per few
    seconds, not once per request. The snapshot is raw telemetry of the whole kind: callers
    apply tenant scoping after reading it, exactly as without the cache.
    """
    names = tuple(sorted(set(names)))
    return shared_read(
        "latest-snapshot",
        (cluster_id, kind, names),
        lambda: latest_kind(cluster_id, kind, names),
    )
