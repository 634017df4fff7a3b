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
from rollout.labels import action_label_lazy, reason_data, state_label_lazy
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
        PlanState.ROLLBACK_UNCONFIRMED,
    ),
    "verify_rollback": (PlanState.ROLLBACK_UNCONFIRMED,),
    "router_failed": (PlanState.RUNNING, PlanState.PAUSED, PlanState.ROLLBACK_UNCONFIRMED),
    "router_confirmed": (PlanState.ROLLBACK_UNCONFIRMED,),
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


def _gate_revise(*, phase: Phase) -> list[Gate]:
    """What the open gates of ``phase`` ask approvers to approve changed: a new revision.

    Approvals (and break-glass votes) are bound to a revision, so earlier ones stop counting.
    """
    open_gates = list(
        Gate.objects.select_for_update().filter(
            phase=phase,
            state__in=(
                GateState.ANALYSING,
                GateState.PASSED,
                GateState.AWAITING_APPROVAL,
                GateState.INCONCLUSIVE,
                GateState.REJECTED,
            ),
        )
    )
    for gate in open_gates:
        gate.revision += 1
        gate.save(update_fields=["revision"])
    return open_gates


def _keeps_a_gate(phase: Phase, *, without: Criterion | None = None) -> bool:
    if phase.manual_gate or phase.plan.state == PlanState.DRAFT:
        return True
    decisive = phase.criteria.filter(dry_run=False)
    if without is not None and without.pk is not None:
        decisive = decisive.exclude(pk=without.pk)
    return decisive.exists()


def _revisions(gates: list[Gate]) -> str:
    return "".join(f"; gate {g.pk} now at revision {g.revision}" for g in gates)


def _in_words(first: dict, gates: list[Gate]) -> dict:
    """An audit reason as codes: what changed, then each revised gate by name ("the gray 5%
    gate is now at revision 4"), read in the reader's language (``rollout.labels``)."""
    parts = [first]
    for gate in gates:
        step = gate.plan.gray_steps[gate.step_index] if gate.phase.kind == PhaseKind.GRAY else ""
        parts.append(
            reason_data("gate_revised", phase=gate.phase.kind, percent=step, revision=gate.revision)
        )
    return {"parts": parts, "joiner": "; "}


def criterion_save_check(*, criterion: Criterion) -> Phase | None:
    """Refuse an edit that would leave a started plan's gate measuring nothing.

    Returns the phase the criterion leaves when the edit moves it to another phase (another
    plan's, say), else ``None``. Shared by :func:`criterion_save` and the admin's form, so a
    refused edit is a form error there, not a 500. Raises ``WorkflowConflict``.
    """
    left: Phase | None = None
    if criterion.pk is not None:
        old_phase_id = (
            Criterion.objects.filter(pk=criterion.pk).values_list("phase_id", flat=True).first()
        )
        if old_phase_id is not None and old_phase_id != criterion.phase_id:
            left = Phase.objects.select_related("plan").get(pk=old_phase_id)
    if left is not None and not _keeps_a_gate(left, without=criterion):
        # Moving it away strips the old gate exactly as deleting it would.
        raise WorkflowConflict(
            gettext_noop(
                "this is the last decisive criterion of %(plan)s's %(phase)s gate: add another "
                "there first, or make that phase an explicit manual gate"
            ),
            plan=left.plan.name,
            phase=left.kind,
        )
    if criterion.dry_run and not _keeps_a_gate(criterion.phase, without=criterion):
        raise WorkflowConflict(
            gettext_noop("a started plan's gate needs at least one decisive criterion")
        )
    return left


@transaction.atomic
def criterion_save(*, criterion: Criterion, actor: Actor) -> Criterion:
    """Validate and save a criterion; an open gate of its phase moves to a new revision.

    Changing what a gate measures changes what approvers approve, so approvals given so far
    stop counting (they are bound to the old revision). Turning a started plan's last
    decisive criterion into a dry run is refused (the gate would then measure nothing).
    Moving a criterion to another phase changes **both** gates: each open gate of the phase
    it leaves and of the phase it joins gets a new revision and its plan an audit row, and
    moving a started plan's last decisive criterion away is refused like deleting it.
    """
    if not actor.can_operate():
        raise NotPermitted(gettext_noop("editing gate criteria needs the operate permission"))
    criterion.full_clean()
    created = criterion.pk is None
    left = criterion_save_check(criterion=criterion)
    criterion.save()
    gates = _gate_revise(phase=criterion.phase)
    audit_record(
        actor=actor,
        action="criterion_add" if created else "criterion_change",
        plan=criterion.phase.plan,
        obj=criterion,
        reason=criterion.describe() + _revisions(gates),
        reason_data=_in_words(
            reason_data("criterion_saved", name=criterion.name, condition=criterion.describe()),
            gates,
        ),
    )
    if left is not None:
        left_gates = _gate_revise(phase=left)
        destination = f"{criterion.phase.plan.name} / {criterion.phase.kind}"
        audit_record(
            actor=actor,
            action="criterion_move",
            plan=left.plan,
            obj=criterion,
            reason=f"criterion {criterion.pk} moved to {destination}: {criterion.describe()}"
            + _revisions(left_gates),
            reason_data=_in_words(
                reason_data(
                    "criterion_moved",
                    name=criterion.name,
                    destination=destination,
                    condition=criterion.describe(),
                ),
                left_gates,
            ),
        )
    return criterion


@transaction.atomic
def criterion_delete(*, criterion: Criterion, actor: Actor) -> None:
    """Delete a criterion: a new gate revision and an audit row, like any change.

    Refused (409) when it is the last decisive criterion of a started plan's phase that is
    not an explicit manual gate: a gate with nothing to measure must not pass by itself.
    """
    if not actor.can_operate():
        raise NotPermitted(gettext_noop("editing gate criteria needs the operate permission"))
    phase = criterion.phase
    if not _keeps_a_gate(phase, without=criterion):
        raise WorkflowConflict(
            gettext_noop(
                "this is the gate's last decisive criterion: add another first, or make the "
                "phase an explicit manual gate"
            )
        )
    described, pk, name = criterion.describe(), criterion.pk, criterion.name
    criterion.delete()
    gates = _gate_revise(phase=phase)
    audit_record(
        actor=actor,
        action="criterion_delete",
        plan=phase.plan,
        obj=None,
        reason=f"criterion {pk} deleted: {described}" + _revisions(gates),
        reason_data=_in_words(
            reason_data("criterion_deleted", name=name, condition=described), gates
        ),
    )


@transaction.atomic
def phase_manual_gate_set(*, phase: Phase, manual: bool, actor: Actor, reason: str) -> Phase:
    """Explicitly choose (or drop) a manual gate for ``phase``: audited, with a reason."""
    if not actor.can_operate():
        raise NotPermitted(gettext_noop("choosing a manual gate needs the operate permission"))
    if not (reason or "").strip():
        raise WorkflowConflict(gettext_noop("choosing a manual gate needs a reason"))
    if phase.manual_gate == manual:
        return phase
    phase.manual_gate = manual
    if not manual and not _keeps_a_gate(phase):
        raise WorkflowConflict(
            gettext_noop("the phase has no decisive criteria: it must stay a manual gate")
        )
    phase.save(update_fields=["manual_gate"])
    gates = _gate_revise(phase=phase)
    audit_record(
        actor=actor,
        action="manual_gate_on" if manual else "manual_gate_off",
        plan=phase.plan,
        obj=phase,
        reason=reason.strip() + _revisions(gates),
        reason_data=_in_words(reason_data("text", text=reason.strip()), gates),
    )
    return phase


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
