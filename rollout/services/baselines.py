"""What a gate compares with, and when there is nothing to judge.

**Baselines (Kayenta's canary vs baseline).** A relative criterion (``≥ 0.9 × source``)
compares the target with the source's **pre-move window**: the criterion's aggregate on the
source cluster over the ``window_seconds`` that end when the workload's traffic first left
the source (the actual start of the phase that moves it; the pilot's for cluster-wide
criteria; the run's start for a workload the plan has not moved yet). It is captured when the
analysis run starts and stored on the run's metric result, and a later gate of the same plan
reuses the figure captured for the same workload, metric and window — the pre-move window
does not change, and after the move the source no longer carries the traffic it measured.
The source *after* its traffic left is never the baseline: it reads 0 for a moved training job.

**No data, no traffic, no throughput** never pass (``0 ≥ 0.9 × 0`` does not hold):

- no value of the metric in the window, or fewer than ``min_samples``: Inconclusive;
- a workload criterion whose workload shows **no activity** in the window — an inference
  service with no requests (``inference_request_rate_per_second`` at most 0), a training job
  with no throughput (``training_samples_per_second`` at most 0): Inconclusive, whatever the
  criterion's own figure says (an idle service's latency "holds" any target);
- a relative criterion whose pre-move baseline is missing, came from an idle source, or is
  not above 0: Inconclusive (a factor of nothing proves nothing);
- a workload criterion not bound to a workload identity (a name that was ambiguous when
  existing criteria were migrated): Inconclusive until an operator binds it.

Inconclusive pauses the plan for a human once ``inconclusive_limit`` is exceeded; it neither
passes a gate nor rolls a customer back. Where a source reports no activity metric at all
(an exporter without request counters), the guard cannot tell and the criterion's own values
decide — the README says so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from rollout.labels import reason_data
from rollout.models import Criterion, MetricResult, MigrationPlan, PhaseKind
from telemetry.read import MeasurementError, WindowAggregate

# The figure that says a workload is doing anything at all, per workload kind.
ACTIVITY_METRICS = {
    "training": "training_samples_per_second",
    "inference": "inference_request_rate_per_second",
}
Aggregate = Callable[..., WindowAggregate]
Problem = tuple[str, dict]


def binding_spec(criterion: Criterion) -> dict:
    """The identities a run measures, snapshotted next to the criterion's fields."""
    workload, baseline = criterion.workload, criterion.baseline_workload
    return {
        "workload_id": criterion.workload_id,
        "workload_kind": workload.kind if workload is not None else None,
        "baseline_workload_id": criterion.baseline_workload_id,
        "baseline_key": baseline.name if baseline is not None else criterion.entity_key,
    }


def unbound(spec: dict) -> Problem | None:
    """A workload criterion without an identity is not measured (never by its name)."""
    if spec["entity_kind"] != "workload" or spec.get("workload_id"):
        return None
    key = spec["entity_key"]
    return (
        f"criterion not bound to a workload identity ({key!r} was ambiguous): edit it",
        reason_data("unbound", name=key),
    )


def pre_move_end(plan: MigrationPlan, spec: dict, now: datetime) -> datetime:
    """When the baseline's traffic first left the source (``now`` if it has not yet)."""
    if spec["entity_kind"] == "workload":
        item = plan.workloads.filter(workload_id=spec.get("baseline_workload_id")).first()
        kind = item.phase if item is not None else None
    else:
        kind = PhaseKind.PILOT
    phase = plan.phases.filter(kind=kind).first() if kind else None
    moved = phase.actual_start if phase is not None else None
    return min(moved, now) if moved is not None else now


def _activity(
    aggregate: Aggregate, *, workload_kind: str | None, cluster_id: int, key: str, start, end
) -> float | None:
    """The highest activity figure of the workload in the window; None when unknown."""
    metric = ACTIVITY_METRICS.get(workload_kind or "")
    if metric is None:
        return None
    try:
        found = aggregate(
            aggregation="max",
            metric=metric,
            cluster_id=cluster_id,
            entity_kind="workload",
            entity_key=key,
            start=start,
            end=end,
        )
    except MeasurementError:
        return None  # the source reports no activity metric: the criterion's values decide
    return found.value


def idle(
    aggregate: Aggregate, spec: dict, *, cluster_id: int, start, end, label: str
) -> Problem | None:
    """Inconclusive when the measured workload did nothing in the window."""
    if spec["entity_kind"] != "workload":
        return None
    activity = _activity(
        aggregate,
        workload_kind=spec.get("workload_kind"),
        cluster_id=cluster_id,
        key=spec["entity_key"],
        start=start,
        end=end,
    )
    if activity is None or activity > 0:
        return None
    what = "no throughput" if spec.get("workload_kind") == "training" else "no traffic"
    return (
        f"{what} on the target in the window: nothing to judge {label} by",
        reason_data("idle_training" if what == "no throughput" else "idle_inference", label=label),
    )


@dataclass
class Baseline:
    """A captured pre-move figure, or why there is none."""

    value: float | None
    samples: int
    start: datetime
    end: datetime
    problem: Problem | None = None


def _key(spec: dict) -> tuple:
    return tuple(
        spec.get(k)
        for k in (
            "entity_kind",
            "baseline_workload_id",
            "baseline_key",
            "metric",
            "aggregation",
            "window_seconds",
        )
    )


def baseline_read(
    aggregate: Aggregate, spec: dict, plan: MigrationPlan, *, now: datetime
) -> Baseline:
    """The source's pre-move figure for a relative criterion (reused within the plan)."""
    end = pre_move_end(plan, spec, now)
    start = end - timedelta(seconds=spec["window_seconds"])
    earlier = (
        MetricResult.objects.filter(
            run__gate__plan=plan, baseline_end=end, baseline_value__isnull=False
        )
        .order_by("id")
        .only("spec", "baseline_value", "baseline_samples", "baseline_start")
    )
    for result in earlier:
        if _key(result.spec) == _key(spec):
            return Baseline(result.baseline_value, result.baseline_samples, start, end)
    label = f"{spec['aggregation']}({spec['metric']})"
    key = spec.get("baseline_key") or spec["entity_key"]
    found = aggregate(
        aggregation=spec["aggregation"],
        metric=spec["metric"],
        cluster_id=plan.source_cluster_id,
        entity_kind=spec["entity_kind"],
        entity_key=key,
        start=start,
        end=end,
    )
    if found.value is None:
        problem = (
            f"no source-cluster baseline data in the pre-move window for {label}",
            reason_data("no_baseline_premove", label=label),
        )
        return Baseline(None, 0, start, end, problem)
    if spec["entity_kind"] == "workload":
        activity = _activity(
            aggregate,
            workload_kind=spec.get("workload_kind"),
            cluster_id=plan.source_cluster_id,
            key=key,
            start=start,
            end=end,
        )
        if activity is not None and activity <= 0:
            problem = (
                f"the source was idle in the pre-move window: no baseline for {label}",
                reason_data("idle_baseline", label=label),
            )
            return Baseline(None, found.samples, start, end, problem)
    if found.value <= 0:
        problem = (
            f"the source's pre-move {label} is {found.value:.4g}: a factor of it proves nothing",
            reason_data("zero_baseline", label=label, value=f"{found.value:.4g}"),
        )
        return Baseline(None, found.samples, start, end, problem)
    return Baseline(found.value, found.samples, start, end)


def baseline_capture(aggregate: Aggregate, metric: MetricResult, plan: MigrationPlan, *, now):
    """Capture and store a relative criterion's baseline on its metric result; returns it.

    Errors reading the source leave it empty: the first measurement tries again (the
    pre-move window is in the past, the figure the same).
    """
    spec = metric.spec
    if not spec.get("compare_to_baseline"):
        return None
    found = baseline_read(aggregate, spec, plan, now=now)
    metric.baseline_value = found.value
    metric.baseline_samples = found.samples
    metric.baseline_start, metric.baseline_end = found.start, found.end
    metric.save(
        update_fields=["baseline_value", "baseline_samples", "baseline_start", "baseline_end"]
    )
    return found
