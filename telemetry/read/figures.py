"""Cluster-wide figures for every kind of cluster: the twin's scalars, exporters' cards, or a
PromQL server — with the source of each figure (docs/architecture.md §4).

A cluster scalar (``cluster_*``) is read from the cluster entity where one was written (the
twin, or a push of cluster figures); otherwise, and always for a PromQL-sourced cluster, it
is derived from the cards' values per time bucket (``telemetry.read.fleet``). The window
reads that consumers cite (``cluster_stat(s)``, ``data_span``, ``entity_sums``,
``aggregate_by``) ask the cluster's ``ReadBackend`` the same way.
"""

from __future__ import annotations

from datetime import datetime

import telemetry.read.fleet as fleet
from inventory.models import Cluster
from telemetry.models import FrameLayout, MetricDefinition
from telemetry.read.choice import backend_for
from telemetry.read.local.latest import KindSnapshot
from telemetry.read.local.series import Series, SeriesPoint, utc_at
from telemetry.read.local.windows import CLUSTER_KEY, WindowStat, stat_of_series


def _scalar_source(cluster: Cluster) -> str:
    """Cluster-entity values come from the twin where it writes frames, else from a push."""
    twin = FrameLayout.objects.filter(cluster=cluster).exists()
    return fleet.SOURCE_TWIN if twin else fleet.SOURCE_EXPORTERS


def derived_series(
    cluster: Cluster,
    names: list[str],
    start: datetime,
    end: datetime,
    *,
    hour_aligned: bool = False,
) -> dict[str, Series]:
    """The derivable ``names`` as series over the window, from the cluster's card values
    (``hour_aligned``: at a step that divides the hour)."""
    names = fleet.derivable(names)
    if not names:
        return {}
    backend = backend_for(cluster)
    step, buckets = backend.card_buckets(
        names=fleet.needed_metrics(names), start=start, end=end, hour_aligned=hour_aligned
    )
    curves = fleet.combine(names, buckets)
    source = fleet.source_of(
        backend.derived_source, (agg for per in buckets.values() for agg in per.values())
    )
    return {
        name: Series(
            name,
            CLUSTER_KEY,
            source,
            step,
            [SeriesPoint(utc_at(at), v, v, v, 1) for at, v in points],
        )
        for name, points in curves.items()
        if points
    }


def cluster_series(
    cluster: Cluster,
    metric_name: str,
    start: datetime,
    end: datetime,
    *,
    hour_aligned: bool = False,
) -> Series | None:
    """The cluster scalar's series over the window (derived from cards where the cluster
    has none); ``None`` if there is nothing to read. ``hour_aligned``: at a step that divides
    the hour, so per-hour figures can be cut from it exactly."""
    found = backend_for(cluster).stored_cluster_series(
        cluster=cluster, metric_name=metric_name, start=start, end=end, hour_aligned=hour_aligned
    )
    if found is not None and found.points:
        return found
    derived = derived_series(cluster, [metric_name], start, end, hour_aligned=hour_aligned)
    if metric_name in derived:
        return derived[metric_name]
    return found


def cluster_stats(
    cluster: Cluster, metric_names: list[str], start: datetime, end: datetime
) -> dict[str, WindowStat | None]:
    stats: dict[str, WindowStat | None] = dict.fromkeys(metric_names)
    stats.update(
        backend_for(cluster).stored_cluster_stats(
            cluster=cluster, metric_names=metric_names, start=start, end=end
        )
    )
    missing = [name for name, stat in stats.items() if stat is None]
    for name, series in derived_series(cluster, missing, start, end).items():
        stats[name] = stat_of_series(series, start, end)
    return stats


def cluster_stat(
    cluster: Cluster, metric_name: str, start: datetime, end: datetime
) -> WindowStat | None:
    return cluster_stats(cluster, [metric_name], start, end).get(metric_name)


def data_span(cluster: Cluster, start: datetime, end: datetime) -> tuple[datetime, datetime] | None:
    """First and last time of the cluster's figures in the window: its scalars, else its
    cards' samples (at the plotted resolution)."""
    span = backend_for(cluster).stored_data_span(cluster=cluster, start=start, end=end)
    if span is not None:
        return span
    series = derived_series(cluster, ["cluster_cards_total"], start, end).get("cluster_cards_total")
    if series is None:
        return None
    return series.points[0].ts, series.points[-1].ts


def cluster_figures_latest(
    cluster: Cluster, names: list[str], snapshot: KindSnapshot | None = None
) -> tuple[dict[str, float], dict[str, str]]:
    """``(values, sources)``: the newest value of each cluster figure and where it came from
    (``fleet.SOURCE_*``). ``snapshot`` is the cards' latest values if the caller has them
    (the heatmap's read), else it is read here."""
    backend = backend_for(cluster)
    values = backend.stored_cluster_latest(cluster=cluster, names=names)
    sources = dict.fromkeys(values, _scalar_source(cluster) if values else "")
    missing = [name for name in fleet.derivable(names) if name not in values]
    if missing:
        per_metric = (
            fleet.snapshot_aggs(snapshot)
            if snapshot is not None
            else backend.fleet_latest(names=fleet.needed_metrics(missing))
        )
        source = fleet.source_of(backend.derived_source, per_metric.values())
        for name in missing:
            value = fleet.value_of(fleet.DERIVED[name], per_metric)
            if value is not None:
                values[name] = value
                sources[name] = source
    return values, sources


def cluster_curves(
    cluster: Cluster, names: list[str], start: datetime, end: datetime, have: dict[str, list]
) -> tuple[dict[str, list[tuple[datetime, float]]], dict[str, str]]:
    """``have`` are the curves read from the cluster entity; the empty derivable ones are
    derived from the cards. Returns every curve and the source of each non-empty one."""
    curves = {name: list(have.get(name) or []) for name in names}
    sources = dict.fromkeys((n for n, p in curves.items() if p), _scalar_source(cluster))
    empty = [name for name, points in curves.items() if not points]
    for name, series in derived_series(cluster, empty, start, end).items():
        curves[name] = [(p.ts, p.mean) for p in series.points]
        sources[name] = series.source
    return curves, sources


def entity_sums(
    *, cluster: Cluster, metric_name: str, kind: str, start: datetime, end: datetime
) -> dict[int, tuple[float, int]]:
    """``{entity_id: (sum, count)}`` of ``metric`` for entities of ``kind`` in the window."""
    return backend_for(cluster).entity_sums(
        cluster=cluster, metric_name=metric_name, kind=kind, start=start, end=end
    )


def aggregate_by(
    *, metric: MetricDefinition, cluster_id: int, since: datetime, group: str
) -> dict[str, float]:
    """Mean of ``metric`` per rack, supernode, cluster or tenant since ``since``: the mean of
    each entity's mean (a card counts once however many samples it reported)."""
    return backend_for(cluster_id).aggregate_by(metric=metric, since=since, group=group)
