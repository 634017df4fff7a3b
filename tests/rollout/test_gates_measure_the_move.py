"""Gates that measure the move and notice: the target's expectation from the twin's model of
both accelerators, no pass without one Successful measurement, stale data, explicit overrides."""

from __future__ import annotations

from datetime import timedelta

import pytest

from inventory.models import HardwareModel
from rollout.analysis import scaling
from rollout.analysis import semantics as S
from rollout.models import AnalysisRun, Approval, GateState, PhaseKind, PlanState
from rollout.services.analysis import analysis_run_step
from rollout.services.audit import Actor
from rollout.services.errors import WorkflowConflict
from rollout.services.overrides import plan_override
from rollout.services.transitions import gate_approve, plan_promote, plan_start
from tests.rollout.conftest import at, write
from tests.rollout.test_baselines import (
    THROUGHPUT,
    _measure,
    _source_before_start,
    started_throughput_plan,
)


@pytest.fixture
def trainers(clusters, tenants, workloads) -> dict:
    """``acme-train`` on both clusters, as in tests/rollout/test_baselines.py."""
    from inventory.models import Workload
    from telemetry.models import Entity, EntityKind, MetricDefinition

    made = {}
    for key, cluster in clusters.items():
        workload = Workload.objects.create(
            tenant=tenants["acme"], cluster=cluster, name="acme-train", kind="training"
        )
        Entity.objects.create(
            cluster=cluster, kind=EntityKind.WORKLOAD, key="acme-train", workload=workload
        )
        made[key] = workload
    for name in (THROUGHPUT, "inference_request_rate_per_second"):
        MetricDefinition.objects.get_or_create(name=name, defaults={"entity_kind": "workload"})
    return made


# --- no pass on nothing --------------------------------------------------------------------


@pytest.mark.parametrize("count", [1, 2, 5])
def test_a_metric_without_one_successful_measurement_never_succeeds(count):
    # Limits wide enough never to trip: the count runs out on inconclusive measurements alone
    lenient = S.MetricCounters(count=count, inconclusive_limit=count, failure_limit=count)
    phases = [S.metric_record(lenient, S.INCONCLUSIVE) for _ in range(count)]
    assert phases[-1] == S.INCONCLUSIVE and S.SUCCESSFUL not in phases
    failing = S.MetricCounters(count=count, inconclusive_limit=count, failure_limit=count)
    outcomes = [S.FAILED] + [S.INCONCLUSIVE] * (count - 1)
    assert [S.metric_record(failing, o) for o in outcomes][-1] == S.FAILED
    # One measurement that held is what makes the count a pass
    mixed = S.MetricCounters(count=count, inconclusive_limit=count)
    outcomes = [S.INCONCLUSIVE] * (count - 1) + [S.SUCCESSFUL]
    assert [S.metric_record(mixed, o) for o in outcomes][-1] == S.SUCCESSFUL


def test_an_api_style_count_one_gate_with_no_data_pauses_instead_of_passing(
    plan_factory, users, clusters
):
    plan = plan_factory(criteria={PhaseKind.PILOT: [{"count": 1, "inconclusive_limit": 1}]})
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    run = AnalysisRun.objects.get(gate__plan=plan)
    analysis_run_step(run_id=run.pk, now=at(0))  # nothing in the window
    run.refresh_from_db()
    plan.refresh_from_db()
    assert run.status == "inconclusive"
    assert (plan.state, plan.current_gate.state) == (PlanState.PAUSED, GateState.INCONCLUSIVE)


# --- stale data ----------------------------------------------------------------------------


def test_a_window_whose_newest_value_is_old_is_inconclusive_not_successful(
    plan_factory, users, clusters, settings
):
    plan = plan_factory(criteria={PhaseKind.PILOT: [{"window_seconds": 300, "count": 2}]})
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    run = AnalysisRun.objects.get(gate__plan=plan)
    t = run.traffic_at
    write(clusters["unified"], "acme-chat", t + timedelta(seconds=5), 0.5)
    write(clusters["unified"], "acme-chat", t + timedelta(seconds=15), 0.5)
    analysis_run_step(run_id=run.pk, now=t + timedelta(seconds=25))  # fresh: a verdict
    # 70 s after the last value, the same window still holds both good values
    analysis_run_step(run_id=run.pk, now=t + timedelta(seconds=85))
    first, second = run.metrics.get().measurements.order_by("seq")
    assert first.outcome == "successful"
    assert second.outcome == "inconclusive" and second.value == pytest.approx(0.5)
    limit = 2 * max(
        settings.TELEMETRY_INTERVAL_SECONDS, clusters["unified"].scrape_interval_seconds
    )
    assert f"in the last {limit} s" in second.reason and "stale" in second.reason


# --- the expectation on the target's hardware ---------------------------------------------


@pytest.fixture
def other_card(clusters):
    """The target on another accelerator than the source (the demo's H100 → Ascend move)."""
    card, _ = HardwareModel.objects.get_or_create(
        slug="ascend-950dt",
        defaults={
            "name": "Ascend 950DT",
            "vendor": "huawei",
            "hbm_bytes": 144 * 2**30,
            "hbm_bandwidth_bytes_per_s": 4e12,
            "peak_flops": 1e15,
            "confidence": "low",
        },
    )
    clusters["unified"].hardware_model = card
    clusters["unified"].save()
    return card


def test_a_relative_criterion_judges_the_target_against_the_twins_expectation(
    plan_factory, users, trainers, clusters, other_card, monkeypatch
):
    asked = []

    def model(question):
        asked.append(question)
        return scaling.Scaling(0.532, "test model of both", "H100 SXM", "Ascend 950DT")

    monkeypatch.setattr(scaling, "_providers", [model])
    _source_before_start(clusters, [15.41, 15.41, 15.41])
    plan = started_throughput_plan(plan_factory, users, trainers)
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan.refresh_from_db()
    # 7.9 is far below 0.9 × 15.41 (a raw cross-hardware ratio would fail it) but above
    # 0.9 × the 8.2 the twin expects of this job on the target's cards
    run, metric = _measure(plan, clusters, target=7.9)
    measured = metric.measurements.get()
    assert measured.outcome == "successful"
    assert measured.threshold == pytest.approx(0.9 * 15.41 * 0.532)
    assert "expected 8.198 on Ascend 950DT" in measured.reason
    assert "source 15.41 on H100 SXM" in measured.reason and "measured 7.9" in measured.reason
    assert (metric.expected_scale, metric.expected_note) == (0.532, "test model of both")
    question = asked[-1]
    assert (question.source_hardware, question.target_hardware) == ("h100-sxm", "ascend-950dt")
    assert question.workload == question.target_workload == "acme-train"
    # The baseline window is the one before the move; values before it never count
    assert question.source_window[1] == plan.phases.get(kind="pilot").actual_start
    assert question.target_window[0] > run.traffic_at


def test_a_hardware_pair_the_twin_does_not_model_gives_no_verdict(
    plan_factory, users, trainers, clusters, other_card, monkeypatch
):
    monkeypatch.setattr(scaling, "_providers", [lambda question: None])
    _source_before_start(clusters, [15.41, 15.41, 15.41])
    plan = started_throughput_plan(plan_factory, users, trainers)
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan.refresh_from_db()
    run, metric = _measure(plan, clusters, target=20.0)  # would "pass" any raw comparison
    measured = metric.measurements.get()
    assert measured.outcome == "inconclusive" and measured.threshold is None
    assert "does not model" in measured.reason and "h100-sxm to ascend-950dt" in measured.reason
    assert run.status == "inconclusive"


def test_the_twins_training_model_scales_a_job_between_accelerators():
    from simulation.engine import default_scenario
    from simulation.scaling import _training_rate

    scenario = default_scenario(cards=64, seed=3)
    job = scenario.training_jobs[0]
    h100 = _training_rate(scenario, job.name, "h100-sxm", job.min_cards)
    ascend = _training_rate(scenario, job.name, "ascend-950dt", job.min_cards)
    assert h100 and ascend and h100 != pytest.approx(ascend)
    assert _training_rate(scenario, "no-such-job", "h100-sxm", 8) is None


def test_the_same_accelerator_on_both_sides_needs_no_model(monkeypatch):
    monkeypatch.setattr(scaling, "_providers", [])
    question = scaling.ScalingQuestion(
        metric=THROUGHPUT,
        workload_kind="training",
        workload="j",
        target_workload="j",
        source_cluster_id=1,
        target_cluster_id=2,
        source_hardware="h100-sxm",
        target_hardware="h100-sxm",
        target_name="H100 SXM",
    )
    assert scaling.scaling_for(question).factor == 1.0
    unknown = scaling.ScalingQuestion(**{**question.__dict__, "target_hardware": None})
    assert scaling.scaling_for(unknown) is None


# --- overrides -----------------------------------------------------------------------------


def paused_inconclusive(plan_factory, users, required=2):
    plan = plan_factory(criteria={PhaseKind.PILOT: [{"count": 1}]}, required_approvals=required)
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    analysis_run_step(run_id=AnalysisRun.objects.get(gate__plan=plan).pk, now=at(0))
    plan.refresh_from_db()
    assert plan.state == PlanState.PAUSED
    return plan


def test_promoting_past_an_inconclusive_analysis_is_an_override_marked_everywhere(
    plan_factory, users, approvers
):
    plan = paused_inconclusive(plan_factory, users)
    operator = Actor(users["operator"])
    revision = plan.current_gate.revision
    with pytest.raises(WorkflowConflict, match="override"):
        plan_promote(plan_id=plan.pk, actor=operator)
    with pytest.raises(WorkflowConflict):
        plan_override(plan_id=plan.pk, actor=operator, reason="  ", revision=revision)
    plan_override(plan_id=plan.pk, actor=operator, reason="exporter gap", revision=revision)
    gate = plan.gates.get()
    assert (gate.state, gate.override_of, gate.override_reason) == (
        GateState.AWAITING_APPROVAL,
        "inconclusive",
        "exporter gap",
    )
    for approver in approvers[:2]:
        gate_approve(plan_id=plan.pk, actor=Actor(approver), revision=revision, comment="ok")
    plan.refresh_from_db()
    assert plan.current_phase == "gray"
    assert list(Approval.objects.filter(gate=gate).values_list("override", flat=True)) == [
        True,
        True,
    ]
    actions = list(plan.audit_entries.order_by("id").values_list("action", "reason"))
    override = [a for a in actions if a[0] == "override"]
    assert override and "inconclusive" in override[0][1] and "exporter gap" in override[0][1]
    votes = [reason for action, reason in actions if action == "approve_override"]
    assert votes[0].startswith("override 1/2") and votes[-1].startswith("override 2/2")


def test_the_override_has_its_own_api_operation_and_needs_a_reason(plan_factory, users, client_as):
    plan = paused_inconclusive(plan_factory, users, required=1)
    revision = plan.current_gate.revision
    client = client_as("operator")
    url = f"/api/v1/plans/{plan.pk}/override/"
    refused = client.post(url, {"revision": revision}, content_type="application/json")
    assert refused.status_code == 400 and "reason" in refused.json()["detail"].lower()
    done = client.post(
        url, {"revision": revision, "reason": "known gap"}, content_type="application/json"
    )
    assert done.status_code == 200, done.content
    assert done.json()["state"] == PlanState.AWAITING_APPROVAL
    schema = client.get("/api/schema/")
    if schema.status_code == 200:
        assert b"plans_override" in schema.content


# --- canary vs baseline (Kayenta) ------------------------------------------------------------


def test_a_canary_three_times_slower_than_its_baseline_fails_within_its_slo(
    plan_factory, users, clusters
):
    # The SLO ceiling (1 s) holds for both; the live baseline over the same window does not
    plan = plan_factory(
        criteria={
            PhaseKind.PILOT: [
                {
                    "compare_to_baseline": True,
                    "baseline_window": "same_window",
                    "threshold": 1.2,
                    "count": 1,
                }
            ]
        }
    )
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    run = AnalysisRun.objects.get(gate__plan=plan)
    t = run.traffic_at
    for offset in (5, 15):
        write(clusters["unified"], "acme-chat", t + timedelta(seconds=offset), 0.494)
        write(clusters["legacy"], "acme-chat", t + timedelta(seconds=offset), 0.156)
    analysis_run_step(run_id=run.pk, now=t + timedelta(seconds=25))
    measured = run.metrics.get().measurements.get()
    assert measured.outcome == "failed"
    assert measured.baseline == pytest.approx(0.156)
    assert measured.threshold == pytest.approx(1.2 * 0.156)
    assert "in the same window" in measured.reason


def test_the_serving_template_puts_canary_vs_baseline_beside_the_slo_ceilings(workloads):
    from rollout.services.authoring import CANARY_TOLERANCE, criteria_defaults

    chat = workloads["legacy:acme-chat"]
    chat.slo_ttft_ms, chat.slo_tpot_ms = 2000, 100
    drafts = criteria_defaults(workloads={PhaseKind.GRAY: [chat]})
    gray = {d.name: d for d in drafts if d.phase == PhaseKind.GRAY}
    live = [d for d in gray.values() if d.baseline_window == "same_window"]
    assert {d.metric for d in live} == {"serving_ttft_seconds", "serving_tpot_seconds"}
    assert all(d.compare_to_baseline and d.threshold == CANARY_TOLERANCE for d in live)
    assert "acme-chat-ttft-p99" in gray and "acme-chat-tpot-p99" in gray  # the SLO ceilings
    # The full phase moves everything: no live baseline is left there
    assert not [d for d in drafts if d.phase == PhaseKind.FULL and d.baseline_window != "pre_move"]
