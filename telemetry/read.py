"""Telemetry's one read API: every other app reads telemetry through this module only.

Dashboards, alerts, gates, cost, the report and the REST API call these typed, keyword-only
selectors; none of them touches ``Sample``, ``Frame``, ``Rollup`` or the frame bytes (a test,
``tests/test_architecture.py``, enforces it). Behind the API the store has two shapes — rows
(exporters, JSON pushes, cluster scalars) and dense frames (the twin's fleet arrays) — and
three rollup tiers; a reader never cares which one answered.

- **series**: ``series_read`` (one entity, automatic resolution), ``series_read_many`` /
  ``series_points_many`` (several metrics of one entity, one query per tier), ``series_points``,
  ``kind_series`` (a whole kind as one array per time), ``cluster_series``.
- **window aggregates**: ``window_values`` (every entity of a kind — alert rules),
  ``window_aggregate`` (one entity, percentiles from raw values — gates), ``cluster_stat(s)``,
  ``entity_sums``, ``stat_of_series``, ``data_span``.
- **latest values**: ``latest_scalars``, ``latest_kind``, ``latest_values``,
  ``latest_frame_values``.
- **top-N / group-by / heatmap**: ``top_entities``, ``aggregate_by``, ``latest_kind`` (the
  matrix a heatmap draws), ``frame_means``.
- **identities and status**: ``metrics_by_name``, ``cluster_entity``, ``entities_visible_to``,
  ``entity_labels``, ``heartbeat_statuses``, ``recent_data_gaps``, ``exporter_target_rows``.
"""

from telemetry.registry import metrics_by_name
from telemetry.selectors.entity_windows import (
    MeasurementError,
    WindowAggregate,
    aggregate,
    window_aggregate,
)
from telemetry.selectors.exporters import ExporterTargetRow, exporter_target_rows
from telemetry.selectors.frames import frame_means, latest_frame_values
from telemetry.selectors.gaps import DataGap, recent_data_gaps
from telemetry.selectors.heartbeats import ProcessStatus, any_alive, heartbeat_statuses
from telemetry.selectors.kind_windows import KindWindow, WindowValues, entity_labels, window_values
from telemetry.selectors.latest import (
    LATEST_WINDOW,
    SAMPLE_WINDOW,
    KindSnapshot,
    Points,
    kind_series,
    latest_kind,
    latest_scalars,
    series_points,
    series_points_many,
)
from telemetry.selectors.scoping import entities_visible_to
from telemetry.selectors.series import (
    Series,
    SeriesPoint,
    aggregate_by,
    latest_values,
    series_read,
    series_read_many,
    top_entities,
)
from telemetry.selectors.windows import (
    CLUSTER_KEY,
    WindowStat,
    cluster_entity,
    cluster_series,
    cluster_stat,
    cluster_stats,
    data_span,
    entity_sums,
    stat_of_series,
)

__all__ = [
    "CLUSTER_KEY",
    "LATEST_WINDOW",
    "SAMPLE_WINDOW",
    "DataGap",
    "ExporterTargetRow",
    "KindSnapshot",
    "KindWindow",
    "MeasurementError",
    "Points",
    "ProcessStatus",
    "Series",
    "SeriesPoint",
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
    "entity_sums",
    "exporter_target_rows",
    "frame_means",
    "heartbeat_statuses",
    "kind_series",
    "latest_frame_values",
    "latest_kind",
    "latest_scalars",
    "latest_values",
    "metrics_by_name",
    "recent_data_gaps",
    "series_points",
    "series_points_many",
    "series_read",
    "series_read_many",
    "stat_of_series",
    "top_entities",
    "window_aggregate",
    "window_values",
]
