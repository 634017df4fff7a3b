"""Workflow flows, Given/When/Then: phases, traffic, four-eyes, revisions, the twin."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from accounts.models import Tenant
from inventory.models import Cluster, Workload
from rollout.models import AuditEntry, Criterion, MigrationPlan, PhaseKind, PlanState
from rollout.selectors import traffic_shares_for_cluster
from rollout.services.analysis import analysis_run_step
from rollout.services.audit import Actor
from rollout.services.criteria import criterion_save, phase_manual_gate_set
from rollout.services.errors import FourEyesViolation, NotPermitted, WorkflowConflict
from rollout.services.overrides import plan_override
from rollout.services.plans import plan_create
from rollout.services.transitions import (
    gate_approve,
    gate_reject,
    plan_abort,
    plan_pause,
    plan_promote,
    plan_resume,
    plan_retry,
    plan_start,
)
from tests.rollout.conftest import at, rev


def test_pilot_refuses_core_workloads_and_writes_nothing(clusters, workloads, tenants, users):
    with pytest.raises(ValidationError, match="non-core workloads only"):
        plan_create(
            tenant=tenants["acme"],
            name="bad",
            source_cluster=clusters["legacy"],
            target_cluster=clusters["unified"],
            workloads={PhaseKind.PILOT: [workloads["legacy:acme-chat"]]},
            actor=Actor(users["operator"]),
        )
    assert not MigrationPlan.objects.exists() and not AuditEntry.objects.exists()


def test_a_plan_needs_a_legacy_source_and_a_unified_target(clusters, workloads, tenants, users):
    with pytest.raises(ValidationError):
        plan_create(
            tenant=tenants["acme"],
            name="bad",
            source_cluster=clusters["unified"],
            target_cluster=clusters["legacy"],
            workloads={},
            actor=Actor(users["operator"]),
        )


def promote_and_approve(plan, users, approver="approver"):
    plan_promote(plan_id=plan.pk, actor=Actor(users["operator"]))
    gate_approve(plan_id=plan.pk, actor=Actor(users[approver]), revision=rev(plan))
    plan.refresh_from_db()


def test_a_plan_walks_pilot_gray_steps_and_full_moving_traffic(plan_factory, users, clusters):
    # Given a plan without criteria (each gate's analysis passes at once), one approval each
    plan = plan_factory(gray_steps=[10, 100])
    unified, legacy = clusters["unified"].pk, clusters["legacy"].pk
    assert traffic_shares_for_cluster(cluster_id=unified) == {}  # a draft moves nothing
    # When it starts, the pilot's non-core workload moves; the core one stays on the source
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    assert traffic_shares_for_cluster(cluster_id=unified) == {"acme-batch": 1.0, "acme-chat": 0.0}
    assert traffic_shares_for_cluster(cluster_id=legacy) == {"acme-batch": 0.0, "acme-chat": 1.0}
    # Then each approved gate moves one step
    promote_and_approve(plan, users)
    assert (plan.current_phase, plan.current_step_percent) == ("gray", 10)
    assert traffic_shares_for_cluster(cluster_id=unified)["acme-chat"] == pytest.approx(0.1)
    assert traffic_shares_for_cluster(cluster_id=legacy)["acme-chat"] == pytest.approx(0.9)
    promote_and_approve(plan, users)
    assert plan.current_step_percent == 100
    promote_and_approve(plan, users)
    assert plan.current_phase == "full"
    promote_and_approve(plan, users)
    assert plan.state == PlanState.SUCCEEDED
    assert traffic_shares_for_cluster(cluster_id=legacy) == {"acme-batch": 0.0, "acme-chat": 0.0}
    phases = {p.kind: p for p in plan.phases.all()}
    assert all(p.actual_start and p.actual_end for p in phases.values())
    # Every transition wrote exactly one audit row
    actions = list(plan.audit_entries.order_by("id").values_list("action", flat=True))
    assert actions.count("start") == 1 and actions.count("approve") == 4


def test_illegal_transitions_are_conflicts(plan_factory, users):
    plan = plan_factory()
    with pytest.raises(WorkflowConflict):
        plan_resume(plan_id=plan.pk, actor=Actor(users["operator"]))
    with pytest.raises(WorkflowConflict):
        plan_promote(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    with pytest.raises(WorkflowConflict):
        plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    with pytest.raises(WorkflowConflict, match="changed"):
        plan_pause(plan_id=plan.pk, actor=Actor(users["operator"]), expected_version=0)
    with pytest.raises(WorkflowConflict, match="reason"):
        plan_abort(plan_id=plan.pk, actor=Actor(users["operator"]), reason=" ")


def test_manual_pause_and_resume_return_where_the_plan_was(plan_factory, users):
    plan = plan_factory()
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan_promote(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan_pause(plan_id=plan.pk, actor=Actor(users["operator"]), reason="change freeze")
    with pytest.raises(WorkflowConflict):
        gate_approve(plan_id=plan.pk, actor=Actor(users["approver"]), revision=rev(plan))
    plan_resume(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan.refresh_from_db()
    assert plan.state == PlanState.AWAITING_APPROVAL


def test_inconclusive_pauses_until_approved(plan_factory, users, clusters):
    # Given a pilot gate whose window holds no data
    plan = plan_factory(criteria={PhaseKind.PILOT: [{"count": 1}]})
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    run = plan.gates.get().runs.get()
    analysis_run_step(run_id=run.pk, now=at(0))
    plan.refresh_from_db()
    assert plan.state == PlanState.PAUSED
    # When nobody acts, nothing moves: resume is refused (it is a gate decision)
    with pytest.raises(WorkflowConflict, match="gate decision"):
        plan_resume(plan_id=plan.pk, actor=Actor(users["operator"]))
    # A plain promotion is refused: past an inconclusive analysis is an override
    with pytest.raises(WorkflowConflict, match="override"):
        plan_promote(plan_id=plan.pk, actor=Actor(users["operator"]))
    # Then a human overrides it (with a reason) and an approver approves: gray begins
    plan_override(
        plan_id=plan.pk, actor=Actor(users["operator"]), reason="telemetry gap", revision=rev(plan)
    )
    gate_approve(plan_id=plan.pk, actor=Actor(users["approver"]), revision=rev(plan))
    plan.refresh_from_db()
    assert (plan.state, plan.current_phase) == (PlanState.RUNNING, "gray")


def test_inconclusive_pauses_until_aborted(plan_factory, users, clusters):
    plan = plan_factory(criteria={PhaseKind.PILOT: [{"count": 1}]})
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    analysis_run_step(run_id=plan.gates.get().runs.get().pk, now=at(0))
    plan_abort(plan_id=plan.pk, actor=Actor(users["operator"]), reason="no telemetry")
    plan.refresh_from_db()
    assert plan.state == PlanState.ABORTED
    assert traffic_shares_for_cluster(cluster_id=clusters["unified"].pk)["acme-batch"] == 0.0


def test_four_eyes_requester_cannot_approve_and_the_attempt_is_audited(plan_factory, users):
    superuser = type(users["operator"]).objects.create_superuser("root", password="x")
    plan = plan_factory()
    plan_start(plan_id=plan.pk, actor=Actor(superuser))
    plan_promote(plan_id=plan.pk, actor=Actor(superuser))
    with pytest.raises(FourEyesViolation):
        gate_approve(plan_id=plan.pk, actor=Actor(superuser, ip="10.0.0.7"), revision=rev(plan))
    denied = AuditEntry.objects.get(action="approve_denied")
    assert (denied.actor, denied.source_ip) == (superuser, "10.0.0.7")
    assert "four-eyes" in denied.reason
    plan.refresh_from_db()
    assert plan.state == PlanState.AWAITING_APPROVAL and not plan.current_gate.approvals.exists()


def test_only_approvers_approve(plan_factory, users):
    plan = plan_factory()
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan_promote(plan_id=plan.pk, actor=Actor(users["operator"]))
    with pytest.raises(NotPermitted):
        gate_approve(plan_id=plan.pk, actor=Actor(users["operator"]), revision=rev(plan))
    assert AuditEntry.objects.filter(action="approve_denied").count() == 1


def test_n_approvals_are_needed(plan_factory, users, approvers):
    plan = plan_factory(required_approvals=3)
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan_promote(plan_id=plan.pk, actor=Actor(users["operator"]))
    for i, approver in enumerate(approvers[:3]):
        gate_approve(plan_id=plan.pk, actor=Actor(approver), comment=f"ok {i}", revision=rev(plan))
        plan.refresh_from_db()
        assert plan.current_phase == ("gray" if i == 2 else "pilot")
    with pytest.raises(WorkflowConflict):
        gate_approve(plan_id=plan.pk, actor=Actor(approvers[3]), revision=rev(plan))


def test_the_same_approver_counts_once(plan_factory, users, approvers):
    plan = plan_factory(required_approvals=2)
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan_promote(plan_id=plan.pk, actor=Actor(users["operator"]))
    gate_approve(plan_id=plan.pk, actor=Actor(approvers[0]), revision=rev(plan))
    with pytest.raises(WorkflowConflict, match="already"):
        gate_approve(plan_id=plan.pk, actor=Actor(approvers[0]), revision=rev(plan))


def test_approvals_of_an_older_revision_do_not_count(plan_factory, users, approvers):
    # Given two approvals needed and one given on revision 1
    plan = plan_factory(required_approvals=2)
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan_promote(plan_id=plan.pk, actor=Actor(users["operator"]))
    gate_approve(plan_id=plan.pk, actor=Actor(approvers[0]), revision=rev(plan))
    # When it is rejected and retried, the gate moves to revision 2
    gate_reject(
        plan_id=plan.pk, actor=Actor(approvers[1]), reason="numbers look odd", revision=rev(plan)
    )
    plan_retry(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan.refresh_from_db()
    assert plan.current_gate.revision == 2
    plan_promote(plan_id=plan.pk, actor=Actor(users["operator"]))
    # Then an approval bound to revision 1 is stale, and one new approval is not enough
    with pytest.raises(WorkflowConflict, match="revision"):
        gate_approve(plan_id=plan.pk, actor=Actor(approvers[2]), revision=1)
    gate_approve(plan_id=plan.pk, actor=Actor(approvers[2]), revision=2)
    plan.refresh_from_db()
    assert plan.state == PlanState.AWAITING_APPROVAL
    gate_approve(
        plan_id=plan.pk, actor=Actor(approvers[0]), revision=rev(plan)
    )  # may approve the new revision
    plan.refresh_from_db()
    assert plan.current_phase == "gray"


def test_editing_criteria_moves_the_gate_to_a_new_revision(plan_factory, users, approvers):
    plan = plan_factory(required_approvals=2)
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan_promote(plan_id=plan.pk, actor=Actor(users["operator"]))
    gate_approve(plan_id=plan.pk, actor=Actor(approvers[0]), revision=rev(plan))
    criterion = Criterion(
        phase=plan.phases.get(kind="pilot"),
        name="new",
        metric="inference_latency_p99_seconds",
        entity_key="acme-chat",
        aggregation="p99",
        comparator="le",
        threshold=1,
    )
    criterion_save(criterion=criterion, actor=Actor(users["operator"]))
    # The approvals are void and the gate measures its new criteria again: nothing to approve
    plan.refresh_from_db()
    gate = plan.current_gate
    assert (plan.state, gate.state, gate.revision) == (PlanState.RUNNING, "analysing", 2)
    assert gate.requested_by is None
    # A new run for revision 2; revision 1's passed run no longer decides anything
    assert list(gate.runs.values_list("gate_revision", "status")) == [
        (2, "running"),
        (1, "successful"),
    ]
    with pytest.raises(WorkflowConflict):
        gate_approve(plan_id=plan.pk, actor=Actor(approvers[1]), revision=rev(plan))
    assert plan.audit_entries.filter(action="reanalyse", to_state=PlanState.RUNNING).count() == 1


# --- the twin honours the gray step and moves back on a failed gate ----------------------------


@pytest.fixture
def twin(db, users):
    from simulation.engine import default_scenario
    from simulation.services import twin_run_create

    unified = Cluster.objects.create(name="twin-uni", kind=Cluster.Kind.UNIFIED)
    run = twin_run_create(name="t", cluster=unified, scenario=default_scenario(cards=256, seed=3))
    run.status = "running"
    run.save(update_fields=["status"])
    legacy = Cluster.objects.create(name="twin-old", kind=Cluster.Kind.LEGACY)
    target = Workload.objects.get(cluster=unified, name="chat-llama-3-8b-000")
    source = Workload.objects.create(
        tenant=target.tenant, cluster=legacy, name=target.name, kind="inference", criticality="core"
    )
    return run, unified, legacy, source


def twin_share(run, name: str) -> float:
    from simulation.services.resident import engine_rebuild

    # The checkpoint alone can be older than the last tick (checkpoints are written when due,
    # partly by measured time); the engine's state is the checkpoint plus the ticks' journal.
    run.refresh_from_db()
    return engine_rebuild(run).traffic_share(name)


def tick(run, tick_time: float | None = None) -> None:
    from simulation.services import twin_tick

    run.refresh_from_db()
    assert twin_tick(run_id=run.pk, expected_seq=run.tick_seq, tick_time=tick_time).committed


def in_step(plan, seconds: float):
    """``seconds`` after the current gate's step traffic took effect (its analysis run's)."""
    from datetime import timedelta

    return plan.current_gate.runs.get().traffic_at + timedelta(seconds=seconds)


def test_a_failing_gray_criterion_rolls_traffic_back_and_the_twin_follows(twin, users):
    run, unified, legacy, source = twin
    name = source.name
    # Given a plan moving a core service through gray steps 5% and 25%, with a gray criterion
    # on the share the twin actually routes (≤ 10%)
    plan = plan_create(
        tenant=source.tenant,
        name="twin-plan",
        source_cluster=legacy,
        target_cluster=unified,
        workloads={PhaseKind.GRAY: [source]},
        actor=Actor(users["operator"]),
        gray_steps=[5, 25, 100],
        required_approvals=1,
    )
    criterion_save(
        criterion=Criterion(
            phase=plan.phases.get(kind="gray"),
            name="share",
            metric="workload_traffic_share_ratio",
            entity_key=name,
            aggregation="max",
            comparator="le",
            threshold=0.10,
            window_seconds=30,
            count=1,
            min_samples=1,  # one engine step per tick
        ),
        actor=Actor(users["operator"]),
    )
    for kind in ("pilot", "full"):
        phase_manual_gate_set(
            phase=plan.phases.get(kind=kind),
            manual=True,
            actor=Actor(users["operator"]),
            reason="gray is what this test measures",
        )
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    promote_and_approve(plan, users)  # the pilot (a manual gate) passed at once
    # When the twin ticks at 5%, the gate measures 5% and passes
    assert traffic_shares_for_cluster(cluster_id=unified.pk) == {name: 0.05}
    tick(run, in_step(plan, 25).timestamp())  # a whole tick inside the step
    assert twin_share(run, name) == pytest.approx(0.05)
    analysis_run_step(run_id=plan.current_gate.runs.get().pk, now=in_step(plan, 30))
    plan.refresh_from_db()
    assert plan.current_gate.state == "passed"
    promote_and_approve(plan, users)
    # And at 25% the twin's load moves up and the gate fails
    tick(run, in_step(plan, 25).timestamp())
    assert twin_share(run, name) == pytest.approx(0.25)
    analysis_run_step(run_id=plan.current_gate.runs.get().pk, now=in_step(plan, 30))
    plan.refresh_from_db()
    # Then the plan is rolled back, the selector returns the last stable step (5%) …
    assert plan.state == PlanState.ROLLED_BACK
    assert traffic_shares_for_cluster(cluster_id=unified.pk) == {name: 0.05}
    # … and the next tick moves the twin's load back
    tick(run)
    assert twin_share(run, name) == pytest.approx(0.05)
    assert AuditEntry.objects.get(action="rollback").actor_label == "system"


def test_shares_only_name_workloads_the_cluster_knows(plan_factory, users, clusters):
    plan = plan_factory()
    Workload.objects.filter(cluster=clusters["unified"], name="acme-chat").update(
        tenant=Tenant.objects.get(slug="acme")
    )
    Workload.objects.filter(cluster=clusters["unified"], name="acme-batch").delete()
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    assert traffic_shares_for_cluster(cluster_id=clusters["unified"].pk) == {"acme-chat": 0.0}
