"""Creating plans and the helpers every transition shares: lock, move state, move traffic.

The state machine (action: from → to) — anything else is a 409:

- ``start``: draft → running (pilot begins, its gate's analysis starts)
- ``promote`` (request): running with a passed analysis → awaiting_approval
- ``override`` (request, with a reason): paused on an inconclusive analysis, or rolled back
  on a failed one → awaiting_approval; its approvals are ``approve_override``
- ``reanalyse``: criteria changed under a gate awaiting approval or paused on its analysis
  → running (a new revision, a new analysis run; ``rollout.services.criteria``)
- ``approve``: awaiting_approval → awaiting_approval (more approvals needed), or → running
  (next gray step / phase) or → succeeded (last gate)
- ``reject``: awaiting_approval → paused
- ``pause``: running, awaiting_approval → paused; ``resume``: back where it paused
- ``retry``: paused on an inconclusive or rejected gate, or rolled_back → running
  (new gate revision, new analysis run)
- ``abort``: running, awaiting_approval, paused, rolled_back, rollback_unconfirmed → aborted
  (or rollback_unconfirmed when a router does not confirm the source back)
- ``verify_rollback``: rollback_unconfirmed → aborted / rolled_back (once a router confirms)
- a router refusing, timing out or confirming another share on start, retry or a promotion:
  → paused (the gate ``traffic_unconfirmed``; ``retry`` pushes again); on a restore:
  rollback_unconfirmed → rollback_unconfirmed (alerts). Real routers are asked after the
  transition commits (``rollout.services.router_dispatch``), so these follow it.
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
from django.utils.translation import gettext_noop

from accounts.models import Tenant
from inventory.models import Cluster, Workload
from rollout.labels import action_label_lazy, state_label_lazy
from rollout.models import (
    DEFAULT_PHASE_DAYS,
    PHASE_ORDER,
    Gate,
    MigrationPlan,
    Phase,
    PlanState,
    PlanWorkload,
)
from rollout.models.plans import phase_share
from rollout.services.audit import Actor, audit_record
from rollout.services.errors import NotPermitted, WorkflowConflict
from rollout.services.guards import need_revision
from rollout.services.webhooks import webhooks_emit

# Who may move a plan from which states (the table in the module docstring).
LEGAL_FROM: dict[str, tuple[str, ...]] = {
    "start": (PlanState.DRAFT,),
    # Paused: refused by the gate's state with the reason (an override is its own command).
    "promote": (PlanState.RUNNING, PlanState.PAUSED),
    "approve": (PlanState.AWAITING_APPROVAL,),
    "approve_override": (PlanState.AWAITING_APPROVAL,),
    "reject": (PlanState.AWAITING_APPROVAL,),
    "pause": (PlanState.RUNNING, PlanState.AWAITING_APPROVAL),
    "resume": (PlanState.PAUSED,),
    "retry": (PlanState.PAUSED, PlanState.ROLLED_BACK),
    "abort": (
        PlanState.RUNNING,
        PlanState.AWAITING_APPROVAL,
        PlanState.PAUSED,
        PlanState.ROLLED_BACK,
        PlanState.ROLLBACK_UNCONFIRMED,
    ),
    "verify_rollback": (PlanState.ROLLBACK_UNCONFIRMED,),
    "router_failed": (PlanState.RUNNING, PlanState.PAUSED, PlanState.ROLLBACK_UNCONFIRMED),
    "router_confirmed": (PlanState.ROLLBACK_UNCONFIRMED,),
    "force_promote": (PlanState.RUNNING, PlanState.AWAITING_APPROVAL, PlanState.PAUSED),
    "skip": (PlanState.RUNNING,),
    "rollback": (PlanState.RUNNING,),
    "analysis_inconclusive": (PlanState.RUNNING,),
    # Criteria changed under a gate awaiting approval or paused on its analysis.
    "reanalyse": (PlanState.AWAITING_APPROVAL, PlanState.PAUSED),
    # Promotion past an analysis that did not pass (rollout.services.overrides).
    "override": (PlanState.PAUSED, PlanState.ROLLED_BACK),
    "router_drift": (PlanState.RUNNING,),
    "router_not_served": (PlanState.RUNNING,),
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
        raise NotPermitted(gettext_noop("creating a migration plan needs the operate permission"))
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


def phases_without_gate(plan: MigrationPlan) -> list[str]:
    """Phases of ``plan`` with no decisive (non-dry-run) criterion and no manual-gate choice."""
    return [
        phase.kind
        for phase in plan.phases.all()
        if not phase.manual_gate and not phase.criteria.filter(dry_run=False).exists()
    ]


# --- helpers shared by the transition services (callers hold the transaction) ---------------


def plan_lock(plan_id: int, *, expected_version: int | None = None) -> MigrationPlan:
    plan = MigrationPlan.objects.select_for_update().select_related("tenant").get(pk=plan_id)
    if expected_version is not None and plan.version != expected_version:
        raise WorkflowConflict(
            gettext_noop("the plan changed (version %(version)s, you sent %(sent)s); reload"),
            version=plan.version,
            sent=expected_version,
        )
    return plan


# ``plan_gate_lock``'s revision for a command that decides on no particular revision.
UNBOUND = object()


def plan_gate_lock(
    plan_id: int,
    action: str,
    *,
    expected_version: int | None = None,
    revision: int | None | object = UNBOUND,
) -> tuple[MigrationPlan, Gate]:
    """The plan and its current gate, both locked for the caller's transaction, after the
    checks every gate command makes: the version the caller saw, the command allowed in the
    plan's state and, for a decision (``revision`` given), the gate revision decided on."""
    plan = plan_lock(plan_id, expected_version=expected_version)
    require_state(plan, action)
    gate = Gate.objects.select_for_update().get(pk=plan.current_gate_id)
    if revision is not UNBOUND:
        need_revision(gate, revision)
    return plan, gate


def require_state(plan: MigrationPlan, action: str) -> None:
    if plan.state not in LEGAL_FROM[action]:
        raise WorkflowConflict(
            gettext_noop("cannot %(action)s a plan that is %(state)s"),
            action=action_label_lazy(action),
            state=state_label_lazy(plan.state, dict(PlanState.choices)),
        )


def plan_move(
    plan: MigrationPlan,
    *,
    to: str,
    action: str,
    actor: Actor,
    reason: str = "",
    reason_data: dict | None = None,
    events: tuple[str, ...] = (),
    obj=None,
) -> None:
    """Set the state, bump the version, write the one audit row, queue the webhooks.

    ``reason_data`` is the reason as a code and parameters when the workflow wrote it.
    """
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
        reason_data=reason_data,
    )
    data = {"action": action, "from": before, "to": to, "by": actor.label, "reason": reason}
    # The tenant's own receivers get the actor's role, never a staff username.
    customer_data = {**data, "by": actor.role}
    for event in ("transition", *events):
        webhooks_emit(plan=plan, event=event, data=data, customer_data=customer_data)


def phase_of(plan: MigrationPlan, kind: str) -> Phase:
    return plan.phases.get(kind=kind)


def traffic_apply(plan: MigrationPlan) -> None:
    """Set each workload's share for the plan's current phase and gray step."""
    step = plan.gray_steps[plan.gray_step_index]
    for item in plan.workloads.all():
        share = phase_share(item.phase, plan.current_phase, step)
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


def traffic_withdraw(plan: MigrationPlan) -> None:
    """Every workload's target share to 0: the source takes all the traffic back (abort)."""
    for item in plan.workloads.all():
        if item.share != 0.0:
            item.share = 0.0
            item.save(update_fields=["share"])


def gate_open(plan: MigrationPlan, *, kind: str, step_index: int = 0) -> Gate:
    gate = Gate.objects.create(plan=plan, phase=phase_of(plan, kind), step_index=step_index)
    plan.current_gate = gate
    plan.save(update_fields=["current_gate"])
    return gate
