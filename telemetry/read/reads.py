"""``telemetry.read``'s series, window, latest, top-N and attribution functions: each asks the
cluster's :class:`telemetry.read.backend.ReadBackend` (``backend_for``) and never chooses
"store or server" itself. See :mod:`telemetry.read` for what each returns."""

from __future__ import annotations

import logging
from collections.abc import Hashable, Iterable, Sequence
from datetime import datetime, timedelta

from django.db.models import QuerySet

import telemetry.read.allocated_idle as _allocated_idle
from cluster_portal.web.timerange import TimeRange
from telemetry.families.serving import GATE_METRICS as SERVING_GATE_METRICS
from telemetry.models import Entity, MetricDefinition
from telemetry.read.allocated_idle import AllocatedIdle
from telemetry.read.choice import backend_for, group_by_backend, promql_backends
from telemetry.read.local.attribution import BoundInterval, HeldByHour
from telemetry.read.local.entity_windows import WindowAggregate
from telemetry.read.local.kind_windows import KindWindow, WindowValues
from telemetry.read.local.latest import KindSnapshot, Points
from telemetry.read.local.runs import SpanRuns
from telemetry.read.local.series import Series
from telemetry.read.promql.client import DataSourceUnavailable
from telemetry.read.racks import RackCardFigures
from telemetry.read.serving import serving_window_aggregate

logger = logging.getLogger(__name__)


def series_read(
    *, metric: MetricDefinition, entity: Entity, start: datetime, end: datetime
) -> Series:
    return backend_for(entity.cluster_id).series_read(
        metric=metric, entity=entity, start=start, end=end
    )


def series_points(metric: MetricDefinition | None, entity: Entity | None, tr: TimeRange) -> Points:
    """``(time, mean)`` points of one entity's metric at the resolution the range calls for."""
    if metric is None or entity is None:
        return []
    return backend_for(entity.cluster_id).series_points(metric=metric, entity=entity, tr=tr)


def series_read_entities(
    *, metric: MetricDefinition, entities: Iterable[Entity], start: datetime, end: datetime
) -> dict[int, Series]:
    """``{entity id: Series}``: one metric of many entities, one grouped query per tier from
    the store; entities of PromQL clusters are read one range query each."""
    entities = list(entities)
    found: dict[int, Series] = {}
    for backend, picks in group_by_backend(entities, lambda e: e.cluster_id):
        found.update(
            backend.series_read_entities(
                metric=metric, entities=[entities[i] for i in picks], start=start, end=end
            )
        )
    return found


def runs_under(
    *,
    metric: MetricDefinition,
    spans: Sequence[tuple[Entity, datetime]],
    end: datetime,
    threshold: float,
) -> list[SpanRuns]:
    """Per ``(entity, from)`` span, the runs of readings of ``metric`` whose bucket maximum
    stays under ``threshold`` up to ``end`` (``telemetry.read.local.runs``: one statement
    from the store; entities of PromQL clusters read as one range query each). Every span
    is bucketed over one window, from the earliest span's start."""
    spans = list(spans)
    found = [SpanRuns(measured=False)] * len(spans)
    if not spans:
        return found
    first = min(since for _e, since in spans)
    for backend, picks in group_by_backend(spans, lambda span: span[0].cluster_id):
        runs = backend.runs_under(
            metric=metric,
            spans=[spans[i] for i in picks],
            end=end,
            threshold=threshold,
            read_from=first,
        )
        for i, run in zip(picks, runs, strict=True):
            found[i] = run
    return found


def allocated_idle_values(*, threshold: float, seconds: int, now: datetime) -> AllocatedIdle:
    """Per card an open scheduler interval holds, the seconds its current run of readings
    under ``threshold`` has lasted (``telemetry.read.allocated_idle``): the values of the
    "allocated but idle" alert rule."""
    return _allocated_idle.allocated_idle_values(
        threshold=threshold, seconds=seconds, now=now, runs_under=runs_under
    )


def series_read_many(
    *, metrics: list[MetricDefinition], entity: Entity, start: datetime, end: datetime
) -> dict[str, Series]:
    """Several metrics of one entity: one grouped query per tier from the store, or one
    range query per metric from the cluster's PromQL server."""
    return backend_for(entity.cluster_id).series_read_many(
        metrics=metrics, entity=entity, start=start, end=end
    )


def series_points_many(
    metrics: Iterable[MetricDefinition | None], entity: Entity | None, tr: TimeRange
) -> dict[str, Points]:
    """``{metric name: (time, mean) points}`` for several metrics of one entity."""
    known = [m for m in metrics if m is not None]
    if entity is None or not known:
        return {}
    return backend_for(entity.cluster_id).series_points_many(metrics=known, entity=entity, tr=tr)


# A per-step percentile the twin stores, aggregated by its own quantile -> the histogram.
PERCENTILE_OF_PER_STEP = {
    ("inference_ttft_p99_seconds", "p99"): "serving_ttft_seconds",
    ("inference_tpot_p99_seconds", "p99"): "serving_tpot_seconds",
}


def window_aggregate(
    *,
    metric: str,
    cluster_id: int,
    entity_kind: str,
    entity_key: str,
    aggregation: str,
    start: datetime,
    end: datetime,
    trusted: Sequence[str] | None = None,
    requester_id: int | None = None,
) -> WindowAggregate:
    """Gates: raises ``DataSourceUnavailable`` when the cluster's PromQL server fails.

    ``trusted`` are the criterion's trust selectors (``telemetry.store.provenance``; empty: the
    default — the twin and the cluster's exporters and data source): only those sources'
    values are aggregated, and the answer counts values per source, trusted and ignored.
    ``None`` aggregates every value (pages, not gates). ``requester_id`` is the plan's
    requester: a writer only they created or approved is not evidence (four eyes).
    """
    where = {
        "metric": metric,
        "entity_kind": entity_kind,
        "entity_key": entity_key,
        "aggregation": aggregation,
        "start": start,
        "end": end,
    }
    if (metric, aggregation) in PERCENTILE_OF_PER_STEP and entity_kind == "workload":
        # "p99 over the window of the per-step TTFT P99" is read as what it means: the P99 of
        # the window's requests, from the serving histograms (a percentile of per-step
        # percentiles is none; with no histogram in the window there is no value).
        where["metric"] = PERCENTILE_OF_PER_STEP[(metric, aggregation)]
        return serving_window_aggregate(cluster_id=cluster_id, trusted=trusted, **where)
    if metric in SERVING_GATE_METRICS:  # histograms and derived serving figures
        return serving_window_aggregate(
            cluster_id=cluster_id, trusted=trusted, requester_id=requester_id, **where
        )
    return backend_for(cluster_id).window_aggregate(
        trusted=trusted, requester_id=requester_id, **where
    )


def window_values(*, rule: KindWindow, metric: MetricDefinition, now: datetime) -> WindowValues:
    """Alert rules (fleet-wide): the store's values of every stored cluster, with each
    PromQL cluster's entities answered by its server. A failing server leaves its cluster
    out (alerts unchanged)."""
    result = backend_for(None).window_values(rule=rule, metric=metric, now=now)
    for backend in promql_backends():
        try:
            found = backend.window_values(rule=rule, metric=metric, now=now)
        except DataSourceUnavailable as exc:
            logger.warning("alert rule %s: %s", getattr(rule, "pk", "?"), exc)
            continue
        result.values.update(found.values)
    return result


def latest_scalars(entity: Entity | None, names: Iterable[str]) -> dict[str, float]:
    if entity is None:
        return {}
    return backend_for(entity.cluster_id).latest_scalars(entity=entity, names=list(names))


def latest_kind(cluster_id: int, kind: str, names: Iterable[str]) -> KindSnapshot:
    """Heatmaps: the newest value of each metric for every entity of a kind."""
    return backend_for(cluster_id).latest_kind(kind=kind, names=list(names))


def rack_card_figures(cluster_id: int, names: Iterable[str], *, hot_n: int) -> RackCardFigures:
    """Rack heatmaps and hotspot candidates (``ReadBackend.rack_card_figures``)."""
    names = list(dict.fromkeys(names))
    return backend_for(cluster_id).rack_card_figures(names=names, hot_n=hot_n)


def cards_latest(
    cluster_id: int, entity_ids: Iterable[int], names: Iterable[str]
) -> dict[int, dict[str, float]]:
    """The newest values of a few cards of one cluster (``ReadBackend.cards_latest``)."""
    return backend_for(cluster_id).cards_latest(
        entity_ids=list(entity_ids), names=list(dict.fromkeys(names))
    )


def latest_values(
    entities: Iterable[Entity] | QuerySet,
    *,
    since: timedelta = timedelta(hours=1),
    unavailable: set[int] | None = None,
) -> dict[int, dict[str, float]]:
    """``{entity_id: {metric: newest value}}``. With ``unavailable`` (a set the caller
    passes), a PromQL source that is down does not fail the read: its entities are added to
    the set and left out, so a list still answers (and says "unavailable" for them)."""
    entities = list(entities)
    result: dict[int, dict[str, float]] = {}
    for backend, picks in group_by_backend(entities, lambda e: e.cluster_id):
        mine = [entities[i] for i in picks]
        try:
            result.update(backend.latest_values(entities=mine, since=since))
        except DataSourceUnavailable:
            if unavailable is None:
                raise
            unavailable.update(e.pk for e in mine)
    return result


def top_entities(
    *, metric: MetricDefinition, cluster_id: int, since: datetime, limit: int = 10
) -> list[tuple[str, float]]:
    return backend_for(cluster_id).top_entities(metric=metric, since=since, limit=limit)


def attribution_held_by_hour(
    *,
    cluster_id: int,
    bindings: Sequence[tuple[Hashable, str]],
    start: datetime,
    end: datetime,
) -> HeldByHour:
    """Card-seconds each binding (``(key, selector)``) held per hour of ``[start, end)``."""
    return backend_for(cluster_id).attribution_held_by_hour(bindings=bindings, start=start, end=end)


def attribution_bound_intervals(
    *, cluster_id: int, selector: str, start: datetime, end: datetime, limit: int = 50
) -> tuple[list[BoundInterval], int]:
    """The intervals ``selector`` binds in the window (newest first, at most ``limit``) and
    how many there are in all: what a workload page shows as "what bound"."""
    return backend_for(cluster_id).attribution_bound_intervals(
        selector=selector, start=start, end=end, limit=limit
    )
