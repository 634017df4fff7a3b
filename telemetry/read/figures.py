"""Cluster-wide figures for every kind of cluster: the twin's scalars, exporters' cards, or a
PromQL server — with the source of each figure (docs/architecture.md §4).

A cluster scalar (``cluster_*``) is read from the cluster entity where one was written (the
twin, or a push of cluster figures); otherwise, and always for a PromQL-sourced cluster, it
is derived from the cards' values per time bucket (``telemetry.read.fleet``). The window
reads that consumers cite (``cluster_stat(s)``, ``data_span``, ``entity_sums``,
``aggregate_by``) dispatch the same way.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta

import numpy as np

import telemetry.read.fleet as fleet
from inventory.models import Cluster
from telemetry.models import Entity, FrameLayout, MetricDefinition
from telemetry.read.local import fleet as local_fleet
from telemetry.read.local import latest as _latest
from telemetry.read.local import series as _series
from telemetry.read.local import windows as _windows
from telemetry.read.local.latest import KindSnapshot
from telemetry.read.local.series import Series, SeriesPoint, utc_at
from telemetry.read.local.windows import WindowStat, cluster_entity, stat_of_series
from telemetry.read.promql import fleet as promql_fleet
from telemetry.read.promql import reads as promql
from telemetry.read.promql.translate import entity_key as key_of

GROUP_FIELDS = {
    "rack": "rack__name",
    "supernode": "supernode__name",
    "cluster": "cluster__name",
    "tenant": "tenant__slug",
}


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
    needed = fleet.needed_metrics(names)
    source = promql.source_for(cluster.pk)
    if source is not None:
        step, buckets = promql_fleet.card_buckets(
            source, names=needed, start=start, end=end, hour_aligned=hour_aligned
        )
        label = fleet.SOURCE_PROMQL
    else:
        step, buckets = local_fleet.card_buckets(
            cluster_id=cluster.pk, names=needed, start=start, end=end, hour_aligned=hour_aligned
        )
        label = fleet.SOURCE_DERIVED
    curves = fleet.combine(names, buckets)
    return {
        name: Series(
            name,
            _windows.CLUSTER_KEY,
            label,
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
    found = None
    if promql.source_for(cluster.pk) is None:
        found = _windows.cluster_series(cluster, metric_name, start, end, hour_aligned=hour_aligned)
        if found is not None and found.points:
            return found
    derived = derived_series(cluster, [metric_name], start, end, hour_aligned=hour_aligned)
    if metric_name in derived:
        return derived[metric_name]
    return found


def cluster_stats(
    cluster: Cluster, metric_names: list[str], start: datetime, end: datetime
) -> dict[str, WindowStat | None]:
    stats: dict[str, WindowStat | None] = {name: None for name in metric_names}
    if promql.source_for(cluster.pk) is None:
        stats.update(_windows.cluster_stats(cluster, metric_names, start, end))
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
    if promql.source_for(cluster.pk) is None:
        span = _windows.data_span(cluster, start, end)
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
    values: dict[str, float] = {}
    sources: dict[str, str] = {}
    if promql.source_for(cluster.pk) is None:
        entity = cluster_entity(cluster)
        if entity is not None:
            values = _latest.latest_scalars(entity, names)
            label = _scalar_source(cluster) if values else ""
            sources = dict.fromkeys(values, label)
    missing = [name for name in fleet.derivable(names) if name not in values]
    if missing:
        source = promql.source_for(cluster.pk)
        wanted = fleet.needed_metrics(missing)
        if snapshot is not None:
            per_metric = _snapshot_aggs(snapshot)
        elif source is not None:
            # Summed and counted by the server (one answer per metric, whatever the fleet's
            # size): the newest bucket of the last few minutes, as an instant vector sees it.
            per_metric = _newest_bucket(source, wanted)
        else:
            per_metric = _snapshot_aggs(_latest.latest_kind(cluster.pk, "accelerator", wanted))
        remote = source is not None
        label = fleet.SOURCE_PROMQL if remote else fleet.SOURCE_DERIVED
        for name in missing:
            value = fleet.value_of(fleet.DERIVED[name], per_metric)
            if value is not None:
                values[name] = value
                sources[name] = label
    return values, sources


#: How far back the newest cluster figures of a PromQL source look (Prometheus' lookback).
LATEST_LOOKBACK = timedelta(minutes=5)


def _newest_bucket(source, names: list[str]) -> dict[str, fleet.CardAgg]:
    now = datetime.now(tz=UTC)
    _step, buckets = promql_fleet.card_buckets(
        source, names=names, start=now - LATEST_LOOKBACK, end=now
    )
    out: dict[str, fleet.CardAgg] = {}
    for at in sorted(buckets):  # each metric from its newest bucket
        out.update(buckets[at])
    return out


def _snapshot_aggs(snapshot: KindSnapshot) -> dict[str, fleet.CardAgg]:
    out: dict[str, fleet.CardAgg] = {}
    for name, array in snapshot.values.items():
        have = array[~np.isnan(array)]
        if have.size:
            out[name] = fleet.CardAgg(
                int(have.size), float(have.sum()), int((have >= 0.999999).sum())
            )
    return out


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
    source = promql.source_for(cluster.pk)
    if source is None:
        return _windows.entity_sums(
            cluster=cluster, metric_name=metric_name, kind=kind, start=start, end=end
        )
    window = f"{max(1, int((end - start).total_seconds()))}s"
    samples = promql._Reader(source).instant(metric_name, at=end, template="{}[" + window + "]")
    per_key: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for s in samples:
        if s.entity.kind == kind and start.timestamp() <= s.timestamp < end.timestamp():
            agg = per_key[key_of(s)]
            agg[0] += s.value
            agg[1] += 1
    ids = promql._entity_ids(cluster.pk, kind, per_key)
    return {ids[key]: (total, n) for key, (total, n) in per_key.items() if key in ids and n}


def aggregate_by(
    *, metric: MetricDefinition, cluster_id: int, since: datetime, group: str
) -> dict[str, float]:
    """Mean of ``metric`` per rack, supernode, cluster or tenant since ``since``: the mean of
    each entity's mean (a card counts once however many samples it reported)."""
    source = promql.source_for(cluster_id)
    if source is None:
        return _series.aggregate_by(metric=metric, cluster_id=cluster_id, since=since, group=group)
    now = datetime.now(tz=UTC)
    window = f"{max(1, int((now - since).total_seconds()))}s"
    means: dict[str, float] = {}
    for s in promql._Reader(source).instant(
        metric.name, at=now, template="avg_over_time({}[" + window + "])"
    ):
        if s.entity.kind == metric.entity_kind:
            means[key_of(s)] = s.value
    field = GROUP_FIELDS[group]
    groups = dict(
        Entity.objects.filter(
            cluster_id=cluster_id,
            kind=metric.entity_kind,
            key__in=list(means),
            **{f"{field}__isnull": False},
        ).values_list("key", field)
    )
    totals: dict[str, list[float]] = {}
    for key, mean in means.items():
        if key in groups:
            agg = totals.setdefault(groups[key], [0.0, 0])
            agg[0] += mean
            agg[1] += 1
    return {name: total / n for name, (total, n) in totals.items()}
