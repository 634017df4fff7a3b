"""Which :class:`telemetry.read.backend.ReadBackend` answers a cluster: chosen here, once
per cluster, from whether it has an enabled ``PromQLDataSource`` (cached per process for a few
seconds, ``telemetry.read.promql.reads.source_for``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, TypeVar

from telemetry.read.backend import ReadBackend
from telemetry.read.local.backend import LocalBackend
from telemetry.read.promql.backend import PromQLBackend
from telemetry.read.promql.reads import source_for, sources

if TYPE_CHECKING:
    from inventory.models import Cluster

T = TypeVar("T")


def backend_for(cluster: Cluster | int | None) -> ReadBackend:
    """The backend of ``cluster`` (a ``Cluster`` or its id): its enabled PromQL data source's
    server if it has one, else the store. ``None`` (no cluster): the store."""
    cluster_id = getattr(cluster, "pk", cluster)
    source = source_for(cluster_id)
    if source is not None:
        return PromQLBackend(source)
    return LocalBackend(cluster_id)


def promql_backends() -> list[ReadBackend]:
    """A backend for every cluster with an enabled PromQL data source."""
    return [PromQLBackend(source) for source in sources()]


def group_by_backend(
    items: Iterable[T], cluster_of: Callable[[T], int | None]
) -> list[tuple[ReadBackend, list[int]]]:
    """``items``' positions grouped by the backend that answers them, one group per store
    or server (the store answers all its clusters' entities in one grouped query)."""
    groups: dict[str, tuple[ReadBackend, list[int]]] = {}
    chosen: dict[int | None, ReadBackend] = {}
    for i, item in enumerate(items):
        cluster_id = cluster_of(item)
        if cluster_id not in chosen:
            chosen[cluster_id] = backend_for(cluster_id)
        backend = chosen[cluster_id]
        groups.setdefault(backend.group, (backend, []))[1].append(i)
    return list(groups.values())
