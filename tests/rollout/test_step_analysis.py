"""Gates measure their own step (Argo's initialDelay): in-step data only, enough of it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from rollout.models import AnalysisRun, Criterion, MetricResult, PhaseKind, PlanState
from rollout.services.analysis import analysis_run_step
from rollout.services.audit import Actor
from rollout.services.criteria import criterion_save, phase_manual_gate_set
from rollout.services.errors import WorkflowConflict
from rollout.services.plans import plan_create
from rollout.services.transitions import plan_start
from tests.rollout.conftest import write
from tests.rollout.test_flows import in_step, promote_and_approve, tick, twin, twin_share

__all__ = ["twin"]  # the fixture, shared with test_flows


def started(plan_factory, users, **criterion):
    plan = plan_factory(criteria={PhaseKind.PILOT: [criterion]})
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan.refresh_from_db()
    return plan, AnalysisRun.objects.get(gate=plan.current_gate)


def test_the_first_measurement_waits_the_default_initial_delay(plan_factory, users, settings):
    plan, run = started(plan_factory, users)
    metric = run.metrics.get()
    assert metric.spec["initial_delay_seconds"] == settings.ROLLOUT_INITIAL_DELAY_SECONDS
    assert settings.ROLLOUT_INITIAL_DELAY_SECONDS >= settings.TWIN_TICK_SECONDS
    assert metric.next_at == run.traffic_at + timedelta(
        seconds=settings.ROLLOUT_INITIAL_DELAY_SECONDS
    )


def test_values_stamped_before_the_step_do_not_count(plan_factory, users, clusters):
    plan, run = started(plan_factory, users, window_seconds=300, count=1, threshold=1.0)
    # A bad value from before the step (inside the 300 s window) and a good one after it
    write(clusters["unified"], "acme-chat", run.traffic_at - timedelta(seconds=5), 9.0)
    write(clusters["unified"], "acme-chat", run.traffic_at + timedelta(seconds=5), 0.5)
    # Measured while that value is still fresh (within two telemetry intervals).
    analysis_run_step(run_id=run.pk, now=run.traffic_at + timedelta(seconds=25))
    measurement = run.metrics.get().measurements.get()
    assert measurement.window_start > run.traffic_at
    assert (measurement.outcome, measurement.value, measurement.samples) == ("successful", 0.5, 1)


def test_too_few_in_step_values_are_inconclusive_never_successful(plan_factory, users, clusters):
    plan, run = started(plan_factory, users, window_seconds=300, count=1, min_samples=3)
    for seconds in (5, 15):
        write(clusters["unified"], "acme-chat", run.traffic_at + timedelta(seconds=seconds), 0.1)
    analysis_run_step(run_id=run.pk, now=run.traffic_at + timedelta(seconds=30))
    run.refresh_from_db()
    measurement = run.metrics.get().measurements.get()
    assert measurement.outcome == "inconclusive" and run.status == "inconclusive"
    assert "too few values in the step" in measurement.reason and "2 of 3" in measurement.reason
    plan.refresh_from_db()
    assert plan.state == PlanState.PAUSED


@pytest.mark.django_db(transaction=True)
def test_the_step_starts_when_the_transition_commits(plan_factory, users):
    from django.utils import timezone

    plan = plan_factory(criteria={PhaseKind.PILOT: [{}]})
    before = timezone.now()
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    run = AnalysisRun.objects.get()
    assert run.traffic_at >= run.started_at >= before  # moved to the commit, not before
    assert run.metrics.get().next_at > run.traffic_at


def test_a_plan_with_a_gate_without_criteria_cannot_start(plan_factory, users):
    plan = plan_factory(criteria={PhaseKind.PILOT: [{}], PhaseKind.GRAY: [{}]})
    # The factory makes criteria-less phases explicit manual gates; undo that for "full".
    plan.phases.filter(kind=PhaseKind.FULL).update(manual_gate=False)
    with pytest.raises(WorkflowConflict, match="no decisive criteria.*full"):
        plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan.refresh_from_db()
    assert plan.state == PlanState.DRAFT


def test_after_a_promotion_the_first_measurement_holds_no_value_of_the_previous_share(twin, users):
    run, unified, legacy, source = twin
    name = source.name
    plan = plan_create(
        tenant=source.tenant,
        name="step-plan",
        source_cluster=legacy,
        target_cluster=unified,
        workloads={PhaseKind.GRAY: [source]},
        actor=Actor(users["operator"]),
        gray_steps=[25, 50, 100],
        required_approvals=1,
    )
    # The routed share itself, over a window long enough to reach into the previous step
    criterion_save(
        criterion=Criterion(
            phase=plan.phases.get(kind="gray"),
            name="share",
            metric="workload_traffic_share_ratio",
            entity_key=name,
            aggregation="min",
            comparator="ge",
            threshold=0.0,
            window_seconds=600,
            count=1,
            min_samples=1,
        ),
        actor=Actor(users["operator"]),
    )
    for kind in ("pilot", "full"):  # approvers alone decide those (explicit, audited)
        phase_manual_gate_set(
            phase=plan.phases.get(kind=kind),
            manual=True,
            actor=Actor(users["operator"]),
            reason="test: only the gray step is measured",
        )
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    promote_and_approve(plan, users)  # the pilot moves nothing here
    # The 25% step began a minute ago; the twin ticked in it (stamped inside the step) …
    began = in_step(plan, -60)
    AnalysisRun.objects.filter(gate=plan.current_gate).update(traffic_at=began, started_at=began)
    MetricResult.objects.filter(run__gate=plan.current_gate).update(next_at=began)
    for seconds in (15, 25, 35):
        tick(run, in_step(plan, seconds).timestamp())
    assert twin_share(run, name) == pytest.approx(0.25)
    analysis_run_step(run_id=plan.current_gate.runs.get().pk, now=in_step(plan, 40))
    plan.refresh_from_db()
    assert plan.current_gate.state == "passed"  # … and its gate passed
    # When it is promoted to 50% (the 25% ticks sit inside the new gate's 600 s window) …
    promote_and_approve(plan, users)
    assert plan.current_step_percent == 50
    gate_run = plan.current_gate.runs.get()
    # … a measurement before any in-step tick finds nothing of the new step …
    analysis_run_step(run_id=gate_run.pk, now=in_step(plan, 1))
    assert not gate_run.metrics.get().measurements.exists()  # still in the initial delay
    tick(run, in_step(plan, 15).timestamp())
    assert twin_share(run, name) == pytest.approx(0.5)
    analysis_run_step(run_id=gate_run.pk, now=in_step(plan, 30))
    first = gate_run.metrics.get().measurements.get()
    # … and the first measurement holds only values at the new share (min = 50%, not 25%)
    assert first.window_start > gate_run.traffic_at
    assert first.samples == 1 and first.value == pytest.approx(0.5)
