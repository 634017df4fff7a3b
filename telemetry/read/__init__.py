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
- **where a cluster's data lives**: each cluster is answered by one ``ReadBackend``
  (``telemetry.read.backend``), chosen once per cluster by ``backend_for``
  (``telemetry.read.choice``): the store (``local/backend.py``) or, for a cluster with an
  enabled ``PromQLDataSource``, its Prometheus-compatible server (``promql/backend.py``). The
  functions here only ask the backend. A method a backend lacks fails at class creation; a
  figure it cannot answer raises ``FigureUnavailable``; an unreachable or slow server raises
  ``DataSourceUnavailable`` (pages say so, gates measure Inconclusive, alert rules leave that
  cluster's alerts unchanged).
- **serving endpoints** (vLLM, SGLang, MindIE and the twin, ``telemetry.families.serving``):
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

from datetime import datetime, timedelta

from telemetry.catalogue.registry import metrics_by_name
from telemetry.read.allocated_idle import ALLOCATED_IDLE_METRIC, AllocatedIdle
from telemetry.read.backend import FigureUnavailable, ReadBackend
from telemetry.read.choice import backend_for
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
from telemetry.read.local.attribution import BoundInterval, HeldByHour
from telemetry.read.local.backend import LocalBackend
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
from telemetry.read.local.runs import SpanEntity, SpanRuns, UnderRun, runs_of_points, span_entities
from telemetry.read.local.scoping import entities_visible_to
from telemetry.read.local.series import Series, SeriesPoint
from telemetry.read.local.serving import ServingWindow, serving_counters_latest
from telemetry.read.local.windows import (
    CLUSTER_KEY,
    WindowStat,
    cluster_entity,
    stat_of_series,
)
from telemetry.read.promql.backend import PromQLBackend
from telemetry.read.promql.client import DataSourceUnavailable
from telemetry.read.racks import RackCardFigures, health_counts
from telemetry.read.reads import (
    allocated_idle_values,
    attribution_bound_intervals,
    attribution_held_by_hour,
    cards_latest,
    latest_kind,
    latest_scalars,
    latest_values,
    rack_card_figures,
    runs_under,
    series_points,
    series_points_many,
    series_read,
    series_read_entities,
    series_read_many,
    top_entities,
    window_aggregate,
    window_values,
)
from telemetry.read.serving import (
    ServingComparison,
    serving_canary_comparison,
    serving_window,
    serving_windows,
)
from telemetry.store.provenance import DEFAULT_TRUST, trust_selector_problems
from telemetry.store.retention import RetentionPolicy

__all__ = [
    "FigureUnavailable",
    "RackCardFigures",
    "cards_latest",
    "health_counts",
    "rack_card_figures",
    "ReadBackend",
    "backend_for",
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
    "span_entities",
    "SpanEntity",
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

# Both backends are imported with the façade: a method either lacks is a TypeError when its
# class is created (``ReadBackend.__init_subclass__`` names it), not a figure missing later.
BACKENDS: tuple[type[ReadBackend], ...] = (LocalBackend, PromQLBackend)


def minute_detail_kept_from(now: datetime) -> datetime:
    """The oldest time whose minute detail the retention policy still keeps whole (minute
    rollups and minute frames): a figure built from minutes can be read from here on."""
    return RetentionPolicy.from_settings().minute_detail_kept_from(now)


def serving_counters_kept_for() -> timedelta:
    """How long the raw serving counters are kept (``TELEMETRY_RAW_OTHER_HOURS``, at least the
    minute-detail floor): a window's request percentiles can be read back this far."""
    return RetentionPolicy.from_settings().serving_counters_kept_for
