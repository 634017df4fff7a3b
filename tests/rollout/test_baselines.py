"""Relative criteria compare with the source's pre-move window; nothing passes on nothing
(issue 24, part 2).

The bug replayed: a pilot moved a training job; afterwards it produced 0 samples/s on both
clusters and the gate passed every measurement with "mean = 0 ≥ 0 holds (threshold 0.9 ×
source 0)": the baseline was read on the source *after* its traffic left.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from inventory.models import Workload
from rollout.models import AnalysisRun, PhaseKind, PlanState
from rollout.services.analysis import analysis_run_step
from rollout.services.audit import Actor
from rollout.services.transitions import plan_start
from telemetry.models import Entity, EntityKind, MetricDefinition
from tests.rollout.conftest import write

THROUGHPUT = "training_samples_per_second"
RATE = "inference_request_rate_per_second"


@pytest.fixture
def trainers(clusters, tenants, workloads) -> dict[str, Workload]:
    """``acme-train`` on both clusters (a non-core training job), with telemetry entities."""
    made = {}
    for key, cluster in clusters.items():
        workload = Workload.objects.create(
            tenant=tenants["acme"], cluster=cluster, name="acme-train", kind="training"
        )
        Entity.objects.create(
            cluster=cluster, kind=EntityKind.WORKLOAD, key="acme-train", workload=workload
        )
        made[key] = workload
    for name in (THROUGHPUT, RATE):
        MetricDefinition.objects.get_or_create(name=name, defaults={"entity_kind": "workload"})
    return made


def started_throughput_plan(plan_factory, users, trainers, **spec):
    """A plan whose pilot moves acme-train, gated on throughput ≥ 0.9 × source."""
    from rollout.models import Criterion
    from rollout.services.criteria import criterion_save

    plan = plan_factory()
    plan.workloads.filter(phase=PhaseKind.PILOT).delete()
    from rollout.models import PlanWorkload

    item = PlanWorkload(plan=plan, workload=trainers["legacy"], phase=PhaseKind.PILOT)
    item.full_clean()
    item.save()
    pilot = plan.phases.get(kind=PhaseKind.PILOT)
    pilot.manual_gate = False
    pilot.save()
    fields = {
        "name": "throughput",
        "metric": THROUGHPUT,
        "entity_key": "acme-train",
        "aggregation": "mean",
        "comparator": "ge",
        "threshold": 0.9,
        "compare_to_baseline": True,
        "window_seconds": 60,
        "count": 1,
        "interval_seconds": 30,
        "initial_delay_seconds": 0,
        "min_samples": 1,
        **spec,
    }
    criterion_save(criterion=Criterion(phase=pilot, **fields), actor=Actor(users["operator"]))
    return plan


def _source_before_start(clusters, values, metric=THROUGHPUT, key="acme-train"):
    """Values the source wrote in the minute before the plan starts (its pre-move window)."""
    from django.utils import timezone

    now = timezone.now()
    for i, value in enumerate(values):
        write(clusters["legacy"], key, now - timedelta(seconds=40 - 10 * i), value, metric)


def _measure(plan, clusters, *, target, source_after=0.0, seconds=30):
    run = AnalysisRun.objects.get(gate=plan.current_gate)
    t = run.traffic_at
    for offset in (5, 15, 25):
        write(clusters["unified"], "acme-train", t + timedelta(seconds=offset), target, THROUGHPUT)
        write(
            clusters["legacy"],
            "acme-train",
            t + timedelta(seconds=offset),
            source_after,
            THROUGHPUT,
        )
    analysis_run_step(run_id=run.pk, now=t + timedelta(seconds=seconds))
    run.refresh_from_db()
    return run, run.metrics.get()


def test_a_stopped_job_does_not_pass_against_a_source_that_its_traffic_left(
    plan_factory, users, trainers, clusters
):
    """0 samples/s on both clusters after the move: never Successful."""
    _source_before_start(clusters, [21.8, 21.8, 21.8])
    plan = started_throughput_plan(plan_factory, users, trainers)
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan.refresh_from_db()
    run, metric = _measure(plan, clusters, target=0.0, source_after=0.0)
    measured = metric.measurements.get()
    assert measured.outcome != "successful"
    assert run.status == "inconclusive"
    assert "no throughput" in measured.reason
    plan.refresh_from_db()
    assert plan.state == PlanState.PAUSED


def test_the_baseline_is_the_source_before_the_move_captured_on_the_run(
    plan_factory, users, trainers, clusters
):
    _source_before_start(clusters, [21.8, 21.8, 21.8])
    plan = started_throughput_plan(plan_factory, users, trainers)
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan.refresh_from_db()
    metric = AnalysisRun.objects.get(gate=plan.current_gate).metrics.get()
    # Captured when the step started: the source's window before the pilot moved the job.
    assert metric.baseline_value == pytest.approx(21.8)
    assert metric.baseline_samples == 3
    assert metric.baseline_end == plan.phases.get(kind=PhaseKind.PILOT).actual_start
    run, metric = _measure(plan, clusters, target=20.0, source_after=0.0)
    measured = metric.measurements.get()
    assert (measured.outcome, measured.baseline) == ("successful", pytest.approx(21.8))
    assert measured.threshold == pytest.approx(0.9 * 21.8)
    assert "before the move" in measured.reason


def test_a_throughput_drop_after_the_move_fails_against_the_pre_move_baseline(
    plan_factory, users, trainers, clusters
):
    _source_before_start(clusters, [21.8, 21.8, 21.8])
    plan = started_throughput_plan(plan_factory, users, trainers)
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan.refresh_from_db()
    # 15 samples/s on the target: 15 ≥ 0.9 × 0 "held" against the emptied source.
    run, metric = _measure(plan, clusters, target=15.0, source_after=0.0)
    assert metric.measurements.get().outcome == "failed"
    plan.refresh_from_db()
    assert plan.state == PlanState.ROLLED_BACK


def test_a_zero_baseline_is_inconclusive_never_zero_at_least_zero(
    plan_factory, users, trainers, clusters
):
    # The source was idle before the move: a factor of nothing proves nothing.
    _source_before_start(clusters, [0.0, 0.0, 0.0])
    plan = started_throughput_plan(plan_factory, users, trainers)
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan.refresh_from_db()
    run, metric = _measure(plan, clusters, target=3.0, source_after=0.0)
    measured = metric.measurements.get()
    assert measured.outcome == "inconclusive"
    assert "idle in the pre-move window" in measured.reason


def test_a_service_without_traffic_does_not_pass_a_latency_gate(
    plan_factory, users, clusters, workloads, trainers
):
    plan = plan_factory(
        criteria={PhaseKind.PILOT: [{"count": 1, "initial_delay_seconds": 0, "threshold": 1.0}]}
    )
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan.refresh_from_db()
    run = AnalysisRun.objects.get(gate=plan.current_gate)
    t = run.traffic_at
    for offset in (5, 15, 25):
        # A latency of 0 "holds" any target — but no request arrived at all.
        write(clusters["unified"], "acme-chat", t + timedelta(seconds=offset), 0.0)
        write(clusters["unified"], "acme-chat", t + timedelta(seconds=offset), 0.0, RATE)
    analysis_run_step(run_id=run.pk, now=t + timedelta(seconds=30))
    measured = run.metrics.get().measurements.get()
    assert measured.outcome == "inconclusive"
    assert "no traffic" in measured.reason


def test_a_later_gate_reuses_the_baseline_captured_before_the_move(
    plan_factory, users, trainers, clusters
):
    from rollout.services.baselines import baseline_read
    from rollout.services.measuring import _aggregate

    _source_before_start(clusters, [21.8, 21.8, 21.8])
    plan = started_throughput_plan(plan_factory, users, trainers)
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan.refresh_from_db()
    metric = AnalysisRun.objects.get(gate=plan.current_gate).metrics.get()
    # Months later the raw pre-move data is gone; the captured figure is not.
    from telemetry.models import Sample

    Sample.objects.all().delete()
    later = baseline_read(
        _aggregate, metric.spec, plan, now=metric.baseline_end + timedelta(days=90)
    )
    assert later.value == pytest.approx(21.8) and later.problem is None
