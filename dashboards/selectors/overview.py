"""Overview page data: the cluster's utilization curve, throughput and KPI tiles."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from alerts.models import Alert
from cluster_portal.web.rows import plain_rows
from cluster_portal.web.timerange import TimeRange
from dashboards.selectors.common import metric_defs
from dashboards.selectors.day_night import DayNight, scheduler_day_night
from dashboards.selectors.service_slo import ServiceSlo, service_slo
from inventory.models import Cluster, Workload
from telemetry.models import Entity
from telemetry.read import (
    Points,
    cluster_curves,
    cluster_entity,
    cluster_figures_latest,
    kind_series,
    series_points_many,
)

CLUSTER_KPIS = (
    "cluster_cards_total",
    "cluster_cards_healthy",
    "cluster_cards_allocated",
    "cluster_utilization_allocated_ratio",
    "cluster_utilization_busy_ratio",
    "cluster_mfu_ratio",
    "cluster_training_samples_per_second",
    "cluster_inference_tokens_per_second",
    "cluster_inference_queue_backlog_requests",
    "cluster_inference_timeouts_total",
    "cluster_hbm_live_ratio",
    "cluster_hbm_reserved_ratio",
    "twin_tick_lag_seconds",
    "twin_simulated_hour_of_day",
    "twin_night_window_active",
)
SERIES = (
    "cluster_utilization_allocated_ratio",
    "cluster_utilization_busy_ratio",
    "cluster_cards_healthy",
    "cluster_training_samples_per_second",
    "cluster_inference_tokens_per_second",
    "cluster_inference_ttft_p99_seconds",
    "cluster_inference_tpot_p99_seconds",
    # The twin's clock (absent for real exporters): simulated nights on the wall-time axis.
    "twin_simulated_hour_of_day",
    "twin_night_window_active",
)
# The day/night curve: cards held by training vs inference, as cluster scalars (one row per
# step). Sources that only report per-workload frames fall back to summing those.
SPLIT = {
    "training_cards": ("cluster_training_cards_allocated", "training"),
    "inference_cards": ("cluster_inference_cards_allocated", "inference"),
}


@dataclass
class OverviewData:
    cluster: Cluster
    kpis: dict[str, float | None] = field(default_factory=dict)
    open_alerts: int = 0
    series: dict[str, Points] = field(default_factory=dict)
    # Where each KPI and curve came from ("twin", "exporters", "derived", "promql"): an
    # exporter-fed cluster's fleet figures are derived from its card samples.
    sources: dict[str, str] = field(default_factory=dict)
    slo: ServiceSlo | None = None  # the serving tiles: one window, one set of services
    # A scheduler-fed cluster's day/night curve (its allocation × measured utilization);
    # None for a cluster without a scheduler source (twin clusters: the twin's own split).
    day_night: DayNight | None = None


def workload_entity_ids(cluster: Cluster) -> dict[str, set[int]]:
    """Workload entity ids of the cluster by workload kind (training / inference)."""
    out: dict[str, set[int]] = {kind: set() for kind in Workload.Kind.values}
    rows = Entity.objects.filter(cluster=cluster, kind="workload", workload__isnull=False)
    for entity_id, kind in plain_rows(rows.values_list("pk", "workload__kind")):
        out[kind].add(entity_id)
    return out


def overview(cluster: Cluster, tr: TimeRange) -> OverviewData:
    """KPIs (latest values) and the range's series for one cluster.

    Queries: ~12 latest-scalar lookups, the serving tiles' window sums (shared for a few
    seconds, see :mod:`dashboards.selectors.service_slo`), one per series (rollups at the
    range's resolution) and one layout read per workload-kind curve.
    """
    data = OverviewData(cluster=cluster)
    entity = cluster_entity(cluster)
    scalars, sources = cluster_figures_latest(cluster, list(CLUSTER_KPIS))
    data.kpis = {name: scalars.get(name) for name in CLUSTER_KPIS}
    data.slo = service_slo(cluster, datetime.now(tz=UTC))
    data.open_alerts = Alert.objects.filter(
        entity__cluster=cluster, state__in=(Alert.State.FIRING, Alert.State.ACKNOWLEDGED)
    ).count()
    metrics = metric_defs(
        (*SERIES, *(scalar for scalar, _ in SPLIT.values()), "workload_allocated_cards")
    )
    curves = series_points_many(
        [metrics.get(name) for name in (*SERIES, *(scalar for scalar, _ in SPLIT.values()))],
        entity,
        tr,
    )
    derived, curve_sources = cluster_curves(cluster, list(SERIES), tr.start, tr.end, curves)
    data.series.update(derived)
    data.sources = {**sources, **{f"series:{k}": v for k, v in curve_sources.items()}}
    by_kind = None
    for key, (scalar, workload_kind) in SPLIT.items():
        points = curves.get(scalar, [])
        if not points:
            by_kind = by_kind if by_kind is not None else workload_entity_ids(cluster)
            ids = by_kind[workload_kind]
            points = (
                kind_series(
                    cluster_id=cluster.pk,
                    kind="workload",
                    metric=metrics.get("workload_allocated_cards"),
                    tr=tr,
                    entity_ids=ids,
                )
                if ids
                else []
            )
        data.series[key] = points
    data.day_night = scheduler_day_night(cluster, tr.start, tr.end)
    if data.day_night is not None and not any(data.series[key] for key in SPLIT):
        # No twin or exporter split: the cards curve is the scheduler's, hour by hour.
        for key, (_scalar, workload_kind) in SPLIT.items():
            data.series[key] = list(
                zip(data.day_night.hours, data.day_night.allocated[workload_kind], strict=True)
            )
        data.sources["series:cluster_cards_split"] = "scheduler"
    return data
