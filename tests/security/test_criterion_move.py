"""Issue 26 §4: moving a criterion to another plan's phase must not strip an open gate.

Replayed as found: plan A's pilot gate awaits approval (revision 1, one criterion, 1 of 2
approvals); an operator edits the criterion's ``phase`` to plan B's in the admin. Before the
fix, A stayed at revision 1 with no criteria, the second approval advanced A, and A's audit had
no row (``criterion_save`` revised only the new phase).
"""

from __future__ import annotations

import pytest
from django.forms.models import model_to_dict
from django.urls import reverse

from rollout.models import AuditEntry, Criterion, GateState, PhaseKind, PlanState
from rollout.services.analysis import analysis_run_step
from rollout.services.audit import Actor
from rollout.services.criteria import criterion_save
from rollout.services.errors import WorkflowConflict
from rollout.services.transitions import gate_approve, plan_promote, plan_start
from tests.rollout.conftest import rev, write
from tests.rollout.test_flows import in_step

pytestmark = pytest.mark.django_db


def _awaiting_with_one_criterion(plan_factory, users, approvers, clusters):
    """Plan A: its pilot gate (one criterion) passed analysis and holds 1 of 2 approvals."""
    plan = plan_factory(
        criteria={PhaseKind.PILOT: [{"count": 1, "window_seconds": 60}]}, required_approvals=2
    )
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan.refresh_from_db()
    write(clusters["unified"], "acme-chat", in_step(plan, 10), 0.5)
    analysis_run_step(run_id=plan.current_gate.runs.get().pk, now=in_step(plan, 30))
    plan_promote(plan_id=plan.pk, actor=Actor(users["operator"]))
    gate_approve(plan_id=plan.pk, actor=Actor(approvers[0]), revision=rev(plan))
    plan.refresh_from_db()
    assert plan.current_gate.state == GateState.AWAITING_APPROVAL
    assert plan.current_gate.revision == 1
    return plan


def _admin_move(client, criterion: Criterion, phase):
    data = {k: v for k, v in model_to_dict(criterion).items() if v is not None and k != "id"}
    data["phase"] = phase.pk
    data = {k: ("on" if v is True else v) for k, v in data.items() if v is not False}
    return client.post(reverse("admin:rollout_criterion_change", args=[criterion.pk]), data)


def test_moving_the_last_criterion_of_an_open_gate_to_another_plan_is_refused_in_the_admin(
    plan_factory, users, approvers, clusters, client_as
):
    plan_a = _awaiting_with_one_criterion(plan_factory, users, approvers, clusters)
    plan_b = plan_factory(criteria={PhaseKind.PILOT: [{"name": "b-latency"}]})
    criterion = plan_a.phases.get(kind=PhaseKind.PILOT).criteria.get()
    response = _admin_move(client_as("operator"), criterion, plan_b.phases.get(kind="pilot"))
    assert response.status_code == 200  # the form again, with the refusal — not a 500
    assert "last decisive criterion" in response.content.decode()
    criterion.refresh_from_db()
    assert criterion.phase.plan_id == plan_a.pk
    # The second approval cannot advance a gate that was stripped: it was never stripped.
    gate_approve(plan_id=plan_a.pk, actor=Actor(approvers[1]), revision=rev(plan_a))
    plan_a.refresh_from_db()
    assert plan_a.current_phase == PhaseKind.GRAY  # 2 of 2 on the revision that was measured


def test_moving_a_criterion_revises_and_audits_the_gate_it_leaves(
    plan_factory, users, approvers, clusters, client_as
):
    plan_a = _awaiting_with_one_criterion(plan_factory, users, approvers, clusters)
    pilot = plan_a.phases.get(kind=PhaseKind.PILOT)
    # A second decisive criterion, so the move itself is allowed (the gate keeps one) …
    criterion_save(
        criterion=Criterion(
            phase=pilot,
            name="second",
            metric="inference_latency_p99_seconds",
            entity_key="acme-chat",
            aggregation="max",
            comparator="le",
            threshold=5.0,
        ),
        actor=Actor(users["operator"]),
    )
    plan_a.refresh_from_db()
    revision_before = plan_a.current_gate.revision
    # A changed gate measures again: its approvals are void, the plan is analysing
    assert (plan_a.state, plan_a.current_gate.state) == (PlanState.RUNNING, "analysing")
    with pytest.raises(WorkflowConflict):
        gate_approve(plan_id=plan_a.pk, actor=Actor(approvers[2]), revision=revision_before)
    plan_b = plan_factory(criteria={PhaseKind.PILOT: [{"name": "b-latency"}]})
    moved = pilot.criteria.get(name="latency")
    response = _admin_move(client_as("operator"), moved, plan_b.phases.get(kind="pilot"))
    assert response.status_code == 302
    moved.refresh_from_db()
    assert moved.phase.plan_id == plan_b.pk
    # … and the gate it left moves to a new revision (its approvals stop counting), audited.
    old_gate = plan_a.gates.get(phase=pilot)
    assert old_gate.revision > revision_before
    row = AuditEntry.objects.get(plan=plan_a, action="criterion_move")
    assert f"revision {old_gate.revision}" in row.reason and "moved to" in row.reason
    assert AuditEntry.objects.filter(plan=plan_b, action="criterion_change").exists()


def test_the_service_refuses_to_move_a_started_gates_last_criterion(
    plan_factory, users, approvers, clusters
):
    plan_a = _awaiting_with_one_criterion(plan_factory, users, approvers, clusters)
    plan_b = plan_factory(criteria={PhaseKind.PILOT: [{"name": "b-latency"}]})
    criterion = plan_a.phases.get(kind=PhaseKind.PILOT).criteria.get()
    criterion.phase = plan_b.phases.get(kind=PhaseKind.PILOT)
    with pytest.raises(WorkflowConflict, match="last decisive criterion"):
        criterion_save(criterion=criterion, actor=Actor(users["operator"]))
    assert Criterion.objects.get(pk=criterion.pk).phase.plan_id == plan_a.pk


def test_moving_a_criterion_to_another_tenants_plan_is_a_refusal_not_a_500(
    plan_factory, users, tenants, client_as
):
    plan_a = plan_factory(criteria={PhaseKind.PILOT: [{"name": "a-latency"}]})
    plan_b = plan_factory(criteria={PhaseKind.PILOT: [{"name": "b-latency"}]})
    type(plan_b).objects.filter(pk=plan_b.pk).update(tenant=tenants["panda"])
    criterion = plan_a.phases.get(kind=PhaseKind.PILOT).criteria.get()
    response = _admin_move(client_as("operator"), criterion, plan_b.phases.get(kind="pilot"))
    assert response.status_code == 200  # the form again, with the refusal — not a 500
    assert "workload: The workload belongs to another tenant." in response.content.decode()
    criterion.refresh_from_db()
    assert criterion.phase.plan_id == plan_a.pk
