"""Workloads: the tenant-scoped list with key figures, and one workload's detail.

Customers see only workloads whose entity :func:`entities_visible_to` lets them see (their
tenant's); staff see all. Another tenant's workload is simply not in the queryset, so a
detail view answers 404, never 403 (which would confirm that the id exists).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from django.db.models import QuerySet

from accounts.selectors.scoping import principal_sees_all
from cluster_portal.web.rows import plain_rows
from cluster_portal.web.timerange import TimeRange
from dashboards.selectors.common import finite, latest_snapshot, metric_defs
from inventory.models import Workload
from telemetry.models import Entity
from telemetry.read import Points, entities_visible_to, series_points_many

TRAINING_METRICS = (
    "workload_allocated_cards",
    "training_samples_per_second",
    "training_mfu_ratio",
    "training_progress_ratio",
    "training_state",
    "training_queue_wait_seconds_total",
    "training_preemptions_total",
    "training_communication_ratio",
)
INFERENCE_METRICS = (
    "workload_allocated_cards",
    "inference_replicas",
    "inference_request_rate_per_second",
    "inference_tokens_per_second",
    "inference_ttft_p50_seconds",
    "inference_ttft_p99_seconds",
    "inference_tpot_p50_seconds",
    "inference_tpot_p99_seconds",
    "inference_latency_p50_seconds",
    "inference_latency_p99_seconds",
    "inference_slo_attainment_ratio",
    "inference_queue_backlog_requests",
    "inference_timeouts_total",
    "workload_traffic_share_ratio",
)
LIST_METRICS = tuple(dict.fromkeys(TRAINING_METRICS + INFERENCE_METRICS))
TRAINING_SERIES = (
    "training_samples_per_second",
    "training_mfu_ratio",
    "workload_allocated_cards",
    "training_progress_ratio",
)
INFERENCE_SERIES = (
    "inference_request_rate_per_second",
    "inference_ttft_p99_seconds",
    "inference_tpot_p99_seconds",
    "inference_latency_p99_seconds",
    "inference_slo_attainment_ratio",
    "inference_replicas",
    "inference_queue_backlog_requests",
)
TRAINING_STATES = {0: "not submitted", 1: "queued", 2: "running", 3: "done"}


def workloads_visible_to(user) -> QuerySet[Workload]:
    """The workloads ``user`` may read (THE tenant scoping is ``entities_visible_to``)."""
    workloads = Workload.objects.select_related("tenant", "cluster")
    if principal_sees_all(user):
        return workloads
    visible = entities_visible_to(user).filter(kind="workload", workload__isnull=False)
    return workloads.filter(pk__in=visible.values("workload_id"))


class WorkloadSummary(NamedTuple):
    """What a list shows of one workload, read as a plain row: a fleet of a few thousand
    workloads is listed without building a model instance (and its tenant and cluster) per
    row, which was most of the list's time. A named tuple, since a frozen dataclass costs
    ten ``object.__setattr__`` calls per row."""

    pk: int
    name: str
    kind: str
    criticality: str
    tenant_slug: str
    cluster_id: int
    cluster_name: str
    slo_ttft_ms: float | None
    slo_tpot_ms: float | None
    slo_p99_ms: float | None

    def get_kind_display(self) -> str:
        return str(Workload.Kind(self.kind).label)


SUMMARY_FIELDS = {
    "pk": "pk",
    "name": "name",
    "kind": "kind",
    "criticality": "criticality",
    "tenant_slug": "tenant__slug",
    "cluster_id": "cluster_id",
    "cluster_name": "cluster__name",
    "slo_ttft_ms": "slo_ttft_ms",
    "slo_tpot_ms": "slo_tpot_ms",
    "slo_p99_ms": "slo_p99_ms",
}


@dataclass
class WorkloadColumns:
    """The list's workloads and, per metric, each one's newest value (aligned with
    ``workloads``; NaN: no value). Tables are built column by column from this."""

    workloads: list[WorkloadSummary]
    values: dict[str, np.ndarray]


@dataclass
class WorkloadRow:
    workload: WorkloadSummary
    values: dict[str, float | None] = field(default_factory=dict)


def workload_columns(workloads: QuerySet[Workload]) -> WorkloadColumns:
    """Each workload with its newest figures: one query for the workloads (with their
    telemetry entity) and one frame snapshot per cluster involved."""
    rows = plain_rows(
        workloads.order_by("cluster__name", "tenant__slug", "name").values_list(
            *SUMMARY_FIELDS.values(), "entity__pk"
        )
    )
    summaries = [WorkloadSummary._make(row[:-1]) for row in rows]
    entity_ids = np.array([-1 if row[-1] is None else row[-1] for row in rows], np.int64)
    cluster_ids = np.array([w.cluster_id for w in summaries], np.int64)
    values = {name: np.full(len(summaries), np.nan) for name in LIST_METRICS}
    for cluster_id in np.unique(cluster_ids).tolist():
        snap = latest_snapshot(cluster_id, "workload", LIST_METRICS)
        if not snap.ids.size:
            continue
        mine = np.flatnonzero(cluster_ids == cluster_id)
        at = snap.positions(entity_ids[mine])  # -1: not in the snapshot
        hit = at >= 0
        for name in LIST_METRICS:
            values[name][mine[hit]] = snap.get(name)[at[hit]]
    return WorkloadColumns(summaries, values)


def cells(array: np.ndarray) -> list[float | None]:
    """An array's values as table cells: NaN (no value) and ±inf become None."""
    return np.where(np.isfinite(array), array, None).tolist()


def workload_rows(workloads: QuerySet[Workload]) -> list[WorkloadRow]:
    """:func:`workload_columns` as one row per workload (for pages listing a few)."""
    return workload_rows_of(workload_columns(workloads))


def workload_rows_of(columns: WorkloadColumns) -> list[WorkloadRow]:
    """Already read columns as one row per workload."""
    by_metric = {name: cells(array) for name, array in columns.values.items()}
    return [
        WorkloadRow(w, {name: by_metric[name][i] for name in LIST_METRICS})
        for i, w in enumerate(columns.workloads)
    ]


@dataclass
class WorkloadDetail:
    workload: Workload
    values: dict[str, float | None]
    series: dict[str, Points]
    state: str | None = None


def workload_detail(workload: Workload, tr: TimeRange) -> WorkloadDetail:
    """Newest figures and the range's series of one workload (one query per series)."""
    entity = Entity.objects.filter(workload=workload).first()
    training = workload.kind == Workload.Kind.TRAINING
    names = TRAINING_METRICS if training else INFERENCE_METRICS
    values: dict[str, float | None] = {n: None for n in names}
    if entity is not None:
        latest = (
            latest_snapshot(workload.cluster_id, "workload", names).by_entity().get(entity.pk, {})
        )
        values.update({n: finite(latest.get(n)) for n in names})
    wanted = TRAINING_SERIES if training else INFERENCE_SERIES
    metrics = metric_defs(wanted)
    points = series_points_many([metrics.get(name) for name in wanted], entity, tr)
    series = {name: points.get(name, []) for name in wanted}
    state = None
    if training and values.get("training_state") is not None:
        state = TRAINING_STATES.get(int(values["training_state"]))
    return WorkloadDetail(workload, values, series, state)
