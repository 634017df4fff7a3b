"""Analysis runs with Argo Rollouts semantics, one evaluation per step, state after each."""

from __future__ import annotations

import pytest

from rollout.analysis import semantics as S
from rollout.models import AnalysisRun, GateState, PhaseKind, PlanState
from rollout.services.analysis import analysis_run_step
from rollout.services.audit import Actor
from rollout.services.transitions import plan_start
from tests.rollout.conftest import at, write

# --- the pure rules --------------------------------------------------------------------------


def record_all(counters: S.MetricCounters, outcomes: list[str]) -> list[str]:
    return [S.metric_record(counters, outcome) for outcome in outcomes]


def test_failure_limit_trips_when_failures_exceed_it():
    counters = S.MetricCounters(count=5, failure_limit=1)
    assert record_all(counters, ["successful", "failed", "failed"]) == [
        "running",
        "running",
        "failed",
    ]


def test_inconclusive_limit_trips_when_inconclusives_exceed_it():
    counters = S.MetricCounters(count=5, inconclusive_limit=1)
    assert record_all(counters, ["inconclusive", "successful", "inconclusive"]) == [
        "running",
        "running",
        "inconclusive",
    ]


def test_consecutive_error_limit_defaults_to_four_and_errors_do_not_use_up_count():
    counters = S.MetricCounters(count=2)
    assert record_all(counters, ["error"] * 4) == ["running"] * 4
    assert counters.taken == 0 and counters.errors == 4
    assert S.metric_record(counters, "successful") == "running"  # resets the streak
    assert counters.consecutive_errors == 0 and counters.taken == 1
    assert record_all(counters, ["error"] * 5) == ["running"] * 4 + ["error"]


def test_count_reached_without_tripping_a_limit_is_successful():
    counters = S.MetricCounters(count=3, failure_limit=1)
    assert record_all(counters, ["successful", "failed", "successful"]) == [
        "running",
        "running",
        "successful",
    ]


def test_limits_tripping_together_resolve_error_then_inconclusive_then_failed():
    everything = S.MetricCounters(count=1, failed=1, inconclusive=1, consecutive_errors=5)
    assert S.metric_phase(everything) == "error"
    assert S.metric_phase(S.MetricCounters(count=1, failed=1, inconclusive=1)) == "inconclusive"
    assert S.run_phase([("failed", False), ("inconclusive", False), ("error", False)]) == "error"
    assert S.run_phase([("failed", False), ("inconclusive", False)]) == "inconclusive"
    assert S.run_phase([("failed", False), ("running", False)]) == "failed"  # early stop


def test_dry_run_metrics_never_decide_the_run():
    assert S.run_phase([("failed", True), ("successful", False)]) == "successful"
    assert S.run_phase([("error", True), ("running", False)]) == "running"
    assert S.run_phase([("running", True), ("successful", False)]) == "successful"
    # Only dry-run metrics: nothing decisive measured, never a pass.
    assert S.run_phase([("failed", True)]) == "inconclusive"
    assert S.run_phase([("successful", True), ("running", True)]) == "running"


# --- runs against stored telemetry -----------------------------------------------------------


def started(plan_factory, users, **criterion):
    plan = plan_factory(criteria={PhaseKind.PILOT: [criterion]})
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan.refresh_from_db()
    return plan, AnalysisRun.objects.get(gate=plan.current_gate)


def step(run: AnalysisRun, seconds: float):
    analysis_run_step(run_id=run.pk, now=at(seconds))
    run.refresh_from_db()
    metric = run.metrics.get()
    return run, metric


def test_a_run_takes_count_measurements_one_per_interval_then_passes_the_gate(
    plan_factory, users, clusters
):
    plan, run = started(plan_factory, users, count=3, interval_seconds=30)
    for i, t in enumerate((0, 30, 60)):
        write(clusters["unified"], "acme-chat", at(t - 5), 0.4)
        run, metric = step(run, t)
        assert metric.taken == i + 1
        assert run.status == ("successful" if i == 2 else "running")
        # A second step at the same moment finds nothing due: one measurement per interval.
        run, metric = step(run, t + 1)
        assert metric.measurements.count() == i + 1
    plan.refresh_from_db()
    assert plan.current_gate.state == GateState.PASSED and plan.state == PlanState.RUNNING
    shown = metric.measurements.last()
    assert shown.value == pytest.approx(0.4) and shown.threshold == 1.0
    assert "holds" in shown.reason


def test_failure_limit_aborts_and_rolls_back(plan_factory, users, clusters):
    plan, run = started(plan_factory, users, count=4, failure_limit=1)
    write(clusters["unified"], "acme-chat", at(-5), 3.0)
    run, metric = step(run, 0)
    assert (run.status, metric.failed) == ("running", 1)
    write(clusters["unified"], "acme-chat", at(25), 3.0)
    run, metric = step(run, 30)
    assert (run.status, metric.status, metric.failed) == ("failed", "failed", 2)
    plan.refresh_from_db()
    assert plan.state == PlanState.ROLLED_BACK
    assert plan.current_gate.state == GateState.FAILED
    assert "does not hold" in metric.measurements.last().reason
    # The pilot workload returns to the last stable step: nothing on the target yet.
    assert list(plan.workloads.values_list("share", flat=True)) == [0.0, 0.0]


def test_errors_retry_quickly_do_not_use_up_count_and_abort_past_the_limit(
    plan_factory, users, clusters, tenants
):
    from inventory.models import Workload

    # A workload of the plan's tenant on the target that no telemetry entity stands for:
    # the measurement cannot be taken (an unknown name is refused when authored).
    Workload.objects.create(
        tenant=tenants["acme"],
        cluster=clusters["unified"],
        name="no-such-workload",
        kind="inference",
    )
    plan, run = started(plan_factory, users, entity_key="no-such-workload", count=1)
    for i in range(5):
        run, metric = step(run, i * 10)  # error_retry_seconds = 10, not the 30 s interval
        assert (metric.errors, metric.taken) == (i + 1, 0)
        assert run.status == ("error" if i == 4 else "running")
    assert "no workload 'no-such-workload'" in metric.measurements.last().reason
    plan.refresh_from_db()
    assert plan.state == PlanState.ROLLED_BACK


def test_no_data_in_the_window_is_inconclusive_and_pauses_for_a_human(
    plan_factory, users, clusters
):
    plan, run = started(plan_factory, users, inconclusive_limit=1, window_seconds=60)
    write(clusters["unified"], "acme-chat", at(-120), 0.1)  # outside the 60 s window
    run, metric = step(run, 0)
    assert (run.status, metric.inconclusive) == ("running", 1)
    assert metric.measurements.get().reason.startswith("no data in the window")
    run, metric = step(run, 30)
    assert run.status == "inconclusive"
    plan.refresh_from_db()
    assert plan.state == PlanState.PAUSED and plan.current_gate.state == GateState.INCONCLUSIVE
    # A paused plan takes no measurements.
    run, metric = step(run, 60)
    assert metric.measurements.count() == 2


def test_the_first_failing_metric_stops_the_others_early(plan_factory, users, clusters):
    plan = plan_factory(
        criteria={
            PhaseKind.PILOT: [
                {"name": "latency", "count": 5},
                {"name": "latency-mean", "aggregation": "mean", "threshold": 0.1, "count": 5},
            ]
        }
    )
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    run = AnalysisRun.objects.get()
    write(clusters["unified"], "acme-chat", at(-5), 0.5)
    analysis_run_step(run_id=run.pk, now=at(0))
    run.refresh_from_db()
    assert run.status == "failed" and run.message == "failed: latency-mean"
    other = run.metrics.get(name="latency")
    assert (other.status, other.stopped_early, other.measurements.count()) == (
        "terminated",
        True,
        1,
    )


def test_a_failing_dry_run_criterion_is_shown_but_does_not_decide(plan_factory, users, clusters):
    plan = plan_factory(
        criteria={
            PhaseKind.PILOT: [
                {"name": "latency", "count": 1},
                {"name": "strict", "threshold": 0.01, "count": 1, "dry_run": True},
            ]
        }
    )
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    run = AnalysisRun.objects.get()
    write(clusters["unified"], "acme-chat", at(-5), 0.5)
    analysis_run_step(run_id=run.pk, now=at(0))
    run.refresh_from_db()
    assert run.status == "successful"
    assert run.metrics.get(name="strict").status == "failed"


def test_initial_delay_postpones_the_first_measurement(plan_factory, users, clusters):
    from django.utils import timezone

    plan, run = started(plan_factory, users, initial_delay_seconds=3600)
    write(clusters["unified"], "acme-chat", timezone.now(), 0.5)
    analysis_run_step(run_id=run.pk, now=timezone.now())
    assert run.metrics.get().measurements.count() == 0


def test_baseline_comparison_uses_the_source_cluster(plan_factory, users, clusters):
    plan, run = started(
        plan_factory, users, compare_to_baseline=True, threshold=1.2, count=2, failure_limit=5
    )
    write(clusters["legacy"], "acme-chat", at(-5), 1.0)
    write(clusters["unified"], "acme-chat", at(-5), 1.1)
    run, metric = step(run, 0)
    first = metric.measurements.get()
    assert (first.outcome, first.baseline, first.threshold) == ("successful", 1.0, 1.2)
    write(clusters["unified"], "acme-chat", at(25), 1.5)
    run, metric = step(run, 30)  # window holds 1.1 and 1.5 on the target
    assert metric.measurements.last().outcome == "failed"


def test_missing_baseline_is_inconclusive(plan_factory, users, clusters):
    plan, run = started(plan_factory, users, compare_to_baseline=True, threshold=1.2)
    write(clusters["unified"], "acme-chat", at(-5), 1.1)
    run, metric = step(run, 0)
    assert metric.measurements.get().outcome == "inconclusive"
    assert "baseline" in metric.measurements.get().reason


def test_the_beat_task_measures_every_due_run_once(plan_factory, users, clusters):
    from django.utils import timezone

    from rollout.tasks import measure_analyses

    plan, run = started(plan_factory, users, count=2, initial_delay_seconds=0)
    write(clusters["unified"], "acme-chat", timezone.now(), 0.5)
    assert measure_analyses.apply().get() == {"runs": 1}
    assert measure_analyses.apply().get() == {"runs": 0}  # next one due in 30 s
    assert run.metrics.get().measurements.count() == 1


def test_an_unreachable_promql_data_source_is_inconclusive_never_a_pass(
    plan_factory, users, clusters
):
    from telemetry.models import PromQLDataSource
    from tests.servers import free_port

    PromQLDataSource.objects.create(
        cluster=clusters["unified"], url=f"http://127.0.0.1:{free_port()}", timeout_seconds=0.5
    )
    plan, run = started(plan_factory, users, inconclusive_limit=1, window_seconds=60)
    write(clusters["unified"], "acme-chat", at(-5), 0.1)  # in the store, but not where it reads
    run, metric = step(run, 0)
    assert (run.status, metric.inconclusive, metric.successful, metric.errors) == (
        "running",
        1,
        0,
        0,
    )
    assert "Data source unavailable" in metric.measurements.get().reason
