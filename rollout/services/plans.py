"""Creating plans and the helpers every transition shares: lock, move state, move traffic.

The state machine (action: from → to) — anything else is a 409:

- ``start``: draft → running (pilot begins, its gate's analysis starts)
- ``promote`` (request): running with a passed analysis, or paused on an inconclusive one
  → awaiting_approval
- ``approve``: awaiting_approval → awaiting_approval (more approvals needed), or → running
  (next gray step / phase) or → succeeded (last gate)
- ``reject``: awaiting_approval → paused
- ``pause``: running, awaiting_approval → paused; ``resume``: back where it paused
- ``retry``: paused on an inconclusive or rejected gate, or rolled_back → running
  (new gate revision, new analysis run)
- ``abort``: running, awaiting_approval, paused, rolled_back → aborted
- ``force_promote``: running, awaiting_approval, paused → running / succeeded (with reason)
- automatic: analysis failed or errored: running → rolled_back; inconclusive:
  running → paused

Each transition locks the plan row (``select_for_update``), re-checks the state, bumps
``version`` and writes exactly one audit row.
"""

from __future__ import annotations

from datetime import date, timedelta

from django.db import transaction
from django.utils import timezone

from accounts.models import Tenant
from inventory.models import Cluster, Workload
from rollout.models import (
    DEFAULT_PHASE_DAYS,
    PHASE_ORDER,
    Criterion,
    Gate,
    GateState,
    MigrationPlan,
    Phase,
    PhaseKind,
    PlanState,
    PlanWorkload,
)
from rollout.services.audit import Actor, audit_record
from rollout.services.errors import NotPermitted, WorkflowConflict
from rollout.services.webhooks import webhooks_emit

# Who may move a plan from which states (the table in the module docstring).
LEGAL_FROM: dict[str, tuple[str, ...]] = {
    "start": (PlanState.DRAFT,),
    "promote": (PlanState.RUNNING, PlanState.PAUSED),
    "approve": (PlanState.AWAITING_APPROVAL,),
    "reject": (PlanState.AWAITING_APPROVAL,),
    "pause": (PlanState.RUNNING, PlanState.AWAITING_APPROVAL),
    "resume": (PlanState.PAUSED,),
    "retry": (PlanState.PAUSED, PlanState.ROLLED_BACK),
    "abort": (
        PlanState.RUNNING,
        PlanState.AWAITING_APPROVAL,
        PlanState.PAUSED,
        PlanState.ROLLED_BACK,
    ),
    "force_promote": (PlanState.RUNNING, PlanState.AWAITING_APPROVAL, PlanState.PAUSED),
    "skip": (PlanState.RUNNING,),
    "rollback": (PlanState.RUNNING,),
    "analysis_inconclusive": (PlanState.RUNNING,),
}


@transaction.atomic
def plan_create(
    *,
    tenant: Tenant,
    name: str,
    source_cluster: Cluster,
    target_cluster: Cluster,
    workloads: dict[str, list[Workload]],
    actor: Actor,
    gray_steps: list[int] | None = None,
    required_approvals: int = 2,
    start: date | None = None,
) -> MigrationPlan:
    """A draft plan with default phase windows; ``workloads`` maps phase → workloads.

    Raises ``ValidationError`` (nothing written) for a core workload in the pilot, a
    workload of another tenant or cluster, bad steps or clusters.
    """
    if not actor.can_operate():
        raise NotPermitted("creating a migration plan needs the operate permission")
    plan = MigrationPlan(
        tenant=tenant,
        name=name,
        source_cluster=source_cluster,
        target_cluster=target_cluster,
        required_approvals=required_approvals,
        created_by=actor.user,
    )
    if gray_steps is not None:
        plan.gray_steps = list(gray_steps)
    plan.full_clean()
    plan.save()
    phases_create_default(plan=plan, start=start)
    for kind, members in workloads.items():
        for workload in members:
            item = PlanWorkload(plan=plan, workload=workload, phase=kind)
            item.full_clean()
            item.save()
    audit_record(actor=actor, action="create", plan=plan, to_state=plan.state)
    return plan


def phases_create_default(*, plan: MigrationPlan, start: date | None = None) -> None:
    """Pilot, gray and full back to back with the reference plan's windows."""
    day = start or timezone.localdate()
    for kind in PHASE_ORDER:
        end = day + timedelta(days=DEFAULT_PHASE_DAYS[kind])
        phase = Phase(plan=plan, kind=kind, planned_start=day, planned_end=end)
        phase.full_clean()
        phase.save()
        day = end


@transaction.atomic
def criterion_save(*, criterion: Criterion, actor: Actor) -> Criterion:
    """Validate and save a criterion; an open gate of its phase moves to a new revision.

    Changing what a gate measures changes what approvers approve, so approvals given so far
    stop counting (they are bound to the old revision).
    """
    if not actor.can_operate():
        raise NotPermitted("editing gate criteria needs the operate permission")
    criterion.full_clean()
    created = criterion.pk is None
    criterion.save()
    plan = criterion.phase.plan
    open_gates = Gate.objects.select_for_update().filter(
        phase=criterion.phase,
        state__in=(GateState.ANALYSING, GateState.PASSED, GateState.AWAITING_APPROVAL),
    )
    for gate in open_gates:
        gate.revision += 1
        gate.save(update_fields=["revision"])
    audit_record(
        actor=actor,
        action="criterion_add" if created else "criterion_change",
        plan=plan,
        obj=criterion,
        reason=criterion.describe(),
    )
    return criterion


def phases_without_criteria(plan: MigrationPlan) -> list[str]:
    """The plan's phases whose gates would have nothing deciding them (no non-dry-run
    criterion): a plan cannot start while there are any."""
    deciding = set(
        Criterion.objects.filter(phase__plan=plan, dry_run=False).values_list(
            "phase__kind", flat=True
        )
    )
    return [kind for kind in PHASE_ORDER if kind not in deciding]


def require_criteria(plan: MigrationPlan) -> None:
    missing = phases_without_criteria(plan)
    if missing:
        raise WorkflowConflict(
            "a gate without criteria cannot start: add criteria to " + ", ".join(missing)
        )


# --- helpers shared by the transition services (callers hold the transaction) ---------------


def plan_lock(plan_id: int, *, expected_version: int | None = None) -> MigrationPlan:
    plan = MigrationPlan.objects.select_for_update().select_related("tenant").get(pk=plan_id)
    if expected_version is not None and plan.version != expected_version:
        raise WorkflowConflict(
            f"the plan changed (version {plan.version}, you sent {expected_version}); reload"
        )
    return plan


def require_state(plan: MigrationPlan, action: str) -> None:
    if plan.state not in LEGAL_FROM[action]:
        raise WorkflowConflict(f"cannot {action.replace('_', ' ')} a plan that is {plan.state}")


def plan_move(
    plan: MigrationPlan,
    *,
    to: str,
    action: str,
    actor: Actor,
    reason: str = "",
    events: tuple[str, ...] = (),
    obj=None,
) -> None:
    """Set the state, bump the version, write the one audit row, queue the webhooks."""
    require_state(plan, action)
    before = plan.state
    plan.state = to
    plan.version += 1
    plan.save()
    audit_record(
        actor=actor,
        action=action,
        plan=plan,
        obj=obj,
        from_state=before,
        to_state=to,
        reason=reason,
    )
    data = {"action": action, "from": before, "to": to, "by": actor.label, "reason": reason}
    for event in ("transition", *events):
        webhooks_emit(plan=plan, event=event, data=data)


def phase_of(plan: MigrationPlan, kind: str) -> Phase:
    return plan.phases.get(kind=kind)


def traffic_apply(plan: MigrationPlan) -> None:
    """Set each workload's share for the plan's current phase and gray step."""
    current = PHASE_ORDER.index(plan.current_phase)
    step_share = plan.gray_steps[plan.gray_step_index] / 100.0
    for item in plan.workloads.all():
        order = PHASE_ORDER.index(item.phase)
        if order < current or plan.current_phase == PhaseKind.FULL:
            share = 1.0
        elif order > current:
            share = 0.0
        else:
            share = step_share if item.phase == PhaseKind.GRAY else 1.0
        if item.share != share:
            item.share = share
            item.save(update_fields=["share"])


def traffic_mark_stable(plan: MigrationPlan) -> None:
    """The current shares passed their gate: an abort returns here from now on."""
    for item in plan.workloads.all():
        if item.stable_share != item.share:
            item.stable_share = item.share
            item.save(update_fields=["stable_share"])


def traffic_rollback(plan: MigrationPlan) -> None:
    """Every workload back to the share of the last step whose gate was approved."""
    for item in plan.workloads.all():
        if item.share != item.stable_share:
            item.share = item.stable_share
            item.save(update_fields=["share"])


def gate_open(plan: MigrationPlan, *, kind: str, step_index: int = 0) -> Gate:
    gate = Gate.objects.create(plan=plan, phase=phase_of(plan, kind), step_index=step_index)
    plan.current_gate = gate
    plan.save(update_fields=["current_gate"])
    return gate
