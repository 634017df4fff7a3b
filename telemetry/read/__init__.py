"""Telemetry's one read API: every other app reads telemetry through this module only.

Dashboards, alerts, gates, cost, the report and the REST API call these typed, keyword-only
selectors; none of them touches ``Sample``, ``Frame``, ``Rollup`` or the frame bytes (a test,
``tests/test_architecture.py``, enforces it). Behind the API the store has two shapes — rows
(exporters, JSON pushes, cluster scalars) and dense frames (the twin's fleet arrays) — and
three rollup tiers; a reader never cares which one answered.

- **series**: ``series_read`` (one entity, automatic resolution), ``series_read_many`` /
  ``series_read_entities`` (one metric of many entities, one query per tier) /
  ``series_points_many`` (several metrics of one entity, one query per tier), ``series_points``,
  ``runs_under`` (runs of readings under a threshold per card span, found in the database:
  what "idle" means for the idle list, the ledger's allocated-idle split and the alert rule),
  ``kind_series`` / ``kind_series_many`` (a whole kind reduced per time), ``cluster_series``.
- **window aggregates**: ``window_values`` (every entity of a kind — alert rules),
  ``window_aggregate`` (one entity, percentiles from raw values — gates), ``cluster_stat(s)``,
  ``entity_sums``, ``entity_window_sums`` (several metrics at once),
  ``entity_hourly_sums`` (per hour: what the cost ledger bills),
  ``stat_of_series``, ``data_span``.
- **latest values**: ``latest_scalars``, ``latest_kind``, ``latest_values``,
  ``latest_frame_values``.
- **top-N / group-by / heatmap**: ``top_entities``, ``aggregate_by``, ``latest_kind`` (the
  matrix a heatmap draws), ``frame_means``.
- **where a cluster's data lives**: a cluster with an enabled ``PromQLDataSource`` is answered
  by its Prometheus-compatible server (``telemetry.read.promql``) instead of the store, for series,
  window aggregates, latest values, top-N and heatmaps; an unreachable or slow server raises
  ``DataSourceUnavailable`` (pages say so, gates measure Inconclusive, alert rules leave that
  cluster's alerts unchanged).
- **serving endpoints** (vLLM, SGLang, MindIE and the twin, ``telemetry.ingest.serving``):
  ``serving_window`` — one workload's (or endpoints') TTFT/TPOT p50/p95/p99/mean from
  bucket-aware histograms (Prometheus ``histogram_quantile`` semantics, counter resets
  handled), finished and failed requests, error ratio, requests per second and the requests
  per endpoint, over ``[start, end]``; ``serving_canary_comparison`` — canary vs baseline
  (``ServingComparison``: both windows over the same span and the request split between
  them, what the plan page shows side by side). ``window_aggregate`` answers the catalogue
  names ``serving_ttft_seconds`` / ``serving_tpot_seconds`` (p50/p95/p99/mean),
  ``serving_error_ratio`` and ``serving_requests_per_second`` through the same function, so a
  gate evaluates twin and real engines by one code path; ``p99`` of the twin's per-step
  ``inference_ttft_p99_seconds`` / ``inference_tpot_p99_seconds`` is answered from the same
  histograms (the window's P99, not a percentile of per-step P99s). On a PromQL cluster the
  quantile is ``histogram_quantile(q, sum by (le) (rate(…_bucket{…}[w])))`` on the server.
  ``serving_windows``: many workloads' figures over one window, each and pooled (the
  percentile of all their requests from the sum of their buckets; the report's figures).
  ``serving_counters_latest``: the newest stored serving counters of workloads (the twin
  adds each step's histogram increments to them).
- **attribution** (real clusters): ``attribution_held_by_hour`` (card-seconds per workload
  selector per hour: what showback bills; exporter-label intervals only),
  ``attribution_bound_intervals`` (what bound); ``allocated_idle_values`` (per card an
  open scheduler interval holds, how long it has read idle: the "allocated but idle" alert
  rule's values, ``ALLOCATED_IDLE_METRIC``); ``card_holdings`` (both kinds of interval —
  the scheduler's allocations and the exporters' labels — as spans, for the card swimlane and
  the idle list) and ``holder_now`` (the precedence rule: scheduler, then exporter).
- **cluster figures for every kind of cluster**: ``cluster_figures_latest`` and
  ``cluster_curves`` (value and source of each fleet figure: the twin's scalars, or derived
  from card samples — ``telemetry.read.fleet`` — for exporter-fed and PromQL clusters);
  ``cluster_series``, ``cluster_stat(s)``, ``data_span`` fall back to the same derivation.
- **identities and status**: ``metrics_by_name``, ``cluster_entity``, ``entities_visible_to``,
  ``entity_labels``, ``heartbeat_statuses``, ``recent_data_gaps``, ``exporter_target_rows``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

from django.db.models import QuerySet

from cluster_portal.web.timerange import TimeRange
from telemetry.catalogue.registry import metrics_by_name
from telemetry.families.serving import GATE_METRICS as SERVING_GATE_METRICS
from telemetry.models import Entity, MetricDefinition
from telemetry.read import allocated_idle as _allocated_idle
from telemetry.read.allocated_idle import ALLOCATED_IDLE_METRIC, AllocatedIdle
from telemetry.read.figures import (
    aggregate_by,
    cluster_curves,
    cluster_figures_latest,
    cluster_series,
    cluster_stat,
    cluster_stats,
    data_span,
    derived_series,
    entity_sums,
)
from telemetry.read.fleet import DERIVED as DERIVED_FIGURES
from telemetry.read.local import entity_windows as _entity_windows
from telemetry.read.local import kind_windows as _kind_windows
from telemetry.read.local import latest as _latest
from telemetry.read.local import runs as _runs
from telemetry.read.local import series as _series
from telemetry.read.local import series_entities as _series_entities
from telemetry.read.local.attribution import BoundInterval, HeldByHour
from telemetry.read.local.attribution import bound_intervals as attribution_bound_intervals
from telemetry.read.local.attribution import held_by_hour as attribution_held_by_hour
from telemetry.read.local.buckets import (
    HourlySums,
    entity_hourly_sums,
    entity_window_sums,
    ledger_start,
)
from telemetry.read.local.entity_windows import (
    MeasurementError,
    WindowAggregate,
    aggregate,
)
from telemetry.read.local.evidence_writers import EvidenceWriter, evidence_writers
from telemetry.read.local.exporters import ExporterTargetRow, exporter_target_rows
from telemetry.read.local.frames import frame_means, latest_frame_values
from telemetry.read.local.gaps import DataGap, recent_data_gaps
from telemetry.read.local.heartbeats import ProcessStatus, any_alive, heartbeat_statuses
from telemetry.read.local.holders import CardHolding, card_holdings, holder_now
from telemetry.read.local.kind_windows import KindWindow, WindowValues, entity_labels
from telemetry.read.local.latest import (
    LATEST_WINDOW,
    SAMPLE_WINDOW,
    KindSnapshot,
    Points,
    kind_series,
    kind_series_many,
)
from telemetry.read.local.presence import ABSENCE_METRIC, absence_window, accelerators_absent_q
from telemetry.read.local.runs import SpanRuns, UnderRun, runs_of_points
from telemetry.read.local.scoping import entities_visible_to
from telemetry.read.local.series import Series, SeriesPoint
from telemetry.read.local.serving import ServingWindow, serving_counters_latest
from telemetry.read.local.windows import (
    CLUSTER_KEY,
    WindowStat,
    cluster_entity,
    stat_of_series,
)
from telemetry.read.promql import reads as promql
from telemetry.read.promql.client import DataSourceUnavailable
from telemetry.read.serving import (
    ServingComparison,
    serving_canary_comparison,
    serving_window,
    serving_window_aggregate,
    serving_windows,
)
from telemetry.store.provenance import (
    DATASOURCE_LABEL,
    DEFAULT_TRUST,
    trust_resolve,
    trust_selector_problems,
)
from telemetry.store.retention import RetentionPolicy

__all__ = [
    "EvidenceWriter",
    "evidence_writers",
    "ABSENCE_METRIC",
    "absence_window",
    "accelerators_absent_q",
    "BoundInterval",
    "HeldByHour",
    "attribution_bound_intervals",
    "attribution_held_by_hour",
    "CardHolding",
    "card_holdings",
    "holder_now",
    "CLUSTER_KEY",
    "DERIVED_FIGURES",
    "cluster_curves",
    "cluster_figures_latest",
    "derived_series",
    "DEFAULT_TRUST",
    "DataSourceUnavailable",
    "LATEST_WINDOW",
    "SAMPLE_WINDOW",
    "DataGap",
    "ExporterTargetRow",
    "HourlySums",
    "KindSnapshot",
    "KindWindow",
    "MeasurementError",
    "Points",
    "ProcessStatus",
    "Series",
    "SeriesPoint",
    "ServingComparison",
    "ServingWindow",
    "WindowAggregate",
    "WindowStat",
    "WindowValues",
    "aggregate",
    "aggregate_by",
    "any_alive",
    "cluster_entity",
    "cluster_series",
    "cluster_stat",
    "cluster_stats",
    "data_span",
    "entities_visible_to",
    "entity_labels",
    "entity_hourly_sums",
    "entity_sums",
    "entity_window_sums",
    "exporter_target_rows",
    "frame_means",
    "heartbeat_statuses",
    "kind_series",
    "kind_series_many",
    "latest_frame_values",
    "latest_kind",
    "latest_scalars",
    "latest_values",
    "ledger_start",
    "metrics_by_name",
    "minute_detail_kept_from",
    "serving_counters_kept_for",
    "recent_data_gaps",
    "series_points",
    "series_points_many",
    "series_read",
    "series_read_entities",
    "runs_under",
    "ALLOCATED_IDLE_METRIC",
    "AllocatedIdle",
    "allocated_idle_values",
    "runs_of_points",
    "SpanRuns",
    "UnderRun",
    "series_read_many",
    "serving_canary_comparison",
    "serving_counters_latest",
    "serving_window",
    "serving_windows",
    "stat_of_series",
    "top_entities",
    "trust_selector_problems",
    "window_aggregate",
    "window_values",
]

logger = logging.getLogger(__name__)


# -- dispatch: a cluster with a PromQL data source is read from it, never from the store ------


def series_read(
    *, metric: MetricDefinition, entity: Entity, start: datetime, end: datetime
) -> Series:
    source = promql.source_for(entity.cluster_id)
    if source is not None:
        return promql.series_read(source, metric=metric, entity=entity, start=start, end=end)
    return _series.series_read(metric=metric, entity=entity, start=start, end=end)


def series_points(metric: MetricDefinition | None, entity: Entity | None, tr: TimeRange) -> Points:
    """``(time, mean)`` points of one entity's metric at the resolution the range calls for."""
    if metric is None or entity is None:
        return []
    if promql.source_for(entity.cluster_id) is None:
        return _latest.series_points(metric, entity, tr)
    series = series_read(metric=metric, entity=entity, start=tr.start, end=tr.end)
    return [(p.ts, p.mean) for p in series.points]


def series_read_entities(
    *, metric: MetricDefinition, entities: Iterable[Entity], start: datetime, end: datetime
) -> dict[int, Series]:
    """``{entity id: Series}``: one metric of many entities, one grouped query per tier from
    the store; entities of PromQL clusters are read one range query each."""
    entities = list(entities)
    remote = {e.pk for e in entities if promql.source_for(e.cluster_id) is not None}
    found = _series_entities.series_read_entities(
        metric=metric, entities=[e for e in entities if e.pk not in remote], start=start, end=end
    )
    for entity in entities:
        if entity.pk in remote:
            found[entity.pk] = series_read(metric=metric, entity=entity, start=start, end=end)
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
    from the store; entities of PromQL clusters read as one range query each)."""
    spans = list(spans)
    remote = [i for i, (e, _s) in enumerate(spans) if promql.source_for(e.cluster_id) is not None]
    if not remote:
        return _runs.runs_under(metric=metric, spans=spans, end=end, threshold=threshold)
    local = [i for i in range(len(spans)) if i not in set(remote)]
    found = [SpanRuns(measured=False)] * len(spans)
    for i, runs in zip(
        local,
        _runs.runs_under(
            metric=metric, spans=[spans[i] for i in local], end=end, threshold=threshold
        ),
        strict=True,
    ):
        found[i] = runs
    first = min(since for _e, since in spans)
    for i in remote:
        entity, since = spans[i]
        series = series_read(metric=metric, entity=entity, start=first, end=end)
        found[i] = _runs.runs_of_series(series, since, threshold)
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
    if promql.source_for(entity.cluster_id) is not None:
        return {m.name: series_read(metric=m, entity=entity, start=start, end=end) for m in metrics}
    return _series.series_read_many(metrics=metrics, entity=entity, start=start, end=end)


def series_points_many(
    metrics: Iterable[MetricDefinition | None], entity: Entity | None, tr: TimeRange
) -> dict[str, Points]:
    """``{metric name: (time, mean) points}`` for several metrics of one entity."""
    known = [m for m in metrics if m is not None]
    if entity is None or not known:
        return {}
    if promql.source_for(entity.cluster_id) is None:
        return _latest.series_points_many(known, entity, tr)
    return {m.name: series_points(m, entity, tr) for m in known}


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
    source = promql.source_for(cluster_id)
    if source is not None:
        if not MetricDefinition.objects.filter(name=metric).exists():
            raise MeasurementError(f"unknown metric {metric!r}")
        result = promql.window_aggregate(source, **where)
        if trusted is None:
            return result
        label = DATASOURCE_LABEL  # not its URL: customers read measurements too
        if trust_resolve(
            cluster_id=cluster_id, selectors=trusted, requester_id=requester_id
        ).datasource:
            return WindowAggregate(result.value, result.samples, sources={label: result.samples})
        return WindowAggregate(None, 0, ignored={label: result.samples} if result.samples else {})
    trust = (
        None
        if trusted is None
        else trust_resolve(cluster_id=cluster_id, selectors=trusted, requester_id=requester_id)
    )
    return _entity_windows.window_aggregate(cluster_id=cluster_id, trust=trust, **where)


def window_values(*, rule: KindWindow, metric: MetricDefinition, now: datetime) -> WindowValues:
    """Alert rules (fleet-wide): the store's values, with each PromQL cluster's entities
    answered by its server. A failing server leaves its cluster out (alerts unchanged)."""
    result = _kind_windows.window_values(rule=rule, metric=metric, now=now)
    for source in promql.sources():
        try:
            values = promql.window_values(
                source,
                kind=rule.entity_kind,
                aggregation=rule.aggregation,
                window_seconds=rule.window_seconds,
                metric=metric.name,
                now=now,
            )
        except DataSourceUnavailable as exc:
            logger.warning("alert rule %s: %s", getattr(rule, "pk", "?"), exc)
            continue
        result.values.update(values)
    return result


def latest_scalars(entity: Entity | None, names: Iterable[str]) -> dict[str, float]:
    if entity is not None:
        source = promql.source_for(entity.cluster_id)
        if source is not None:
            names = list(names)
            by_key = promql.latest_by_key(source, kind=entity.kind, names=names)
            return by_key.get(entity.key, {})
    return _latest.latest_scalars(entity, names)


def latest_kind(cluster_id: int, kind: str, names: Iterable[str]) -> KindSnapshot:
    """Heatmaps: the newest value of each metric for every entity of a kind."""
    source = promql.source_for(cluster_id)
    if source is not None:
        return promql.latest_kind(source, kind=kind, names=names)
    return _latest.latest_kind(cluster_id, kind, names)


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
    remote: dict[int, list[Entity]] = {}
    for source in promql.sources():
        mine = [e for e in entities if e.cluster_id == source.cluster_id]
        if mine:
            remote[source.pk] = mine
    if not remote:
        return _latest.latest_values(entities, since=since)
    routed = {e.pk for group in remote.values() for e in group}
    result = _latest.latest_values([e for e in entities if e.pk not in routed], since=since)
    for source in promql.sources():
        if source.pk in remote:
            try:
                result.update(promql.latest_values(source, remote[source.pk]))
            except DataSourceUnavailable:
                if unavailable is None:
                    raise
                unavailable.update(e.pk for e in remote[source.pk])
    return result


def top_entities(
    *, metric: MetricDefinition, cluster_id: int, since: datetime, limit: int = 10
) -> list[tuple[str, float]]:
    source = promql.source_for(cluster_id)
    if source is not None:
        return promql.top_entities(source, metric=metric, since=since, limit=limit)
    return _series.top_entities(metric=metric, cluster_id=cluster_id, since=since, limit=limit)


def minute_detail_kept_from(now: datetime) -> datetime:
    """The oldest time whose minute detail the retention policy still keeps whole (minute
    rollups and minute frames): a figure built from minutes can be read from here on."""
    return RetentionPolicy.from_settings().minute_detail_kept_from(now)


def serving_counters_kept_for() -> timedelta:
    """How long the raw serving counters are kept (``TELEMETRY_RAW_OTHER_HOURS``, at least the
    minute-detail floor): a window's request percentiles can be read back this far."""
    return RetentionPolicy.from_settings().serving_counters_kept_for
