"""Editing a plan's gates: criteria and the manual-gate choice, each audited, each revising.

Changing what a gate measures changes what approvers approve: every open gate of the phase
moves to a new revision (earlier approvals, break-glass votes and override requests stop
counting), and the plan's current gate **measures again** — its analysis is voided and a new
run starts on the step's traffic (which did not change); a plan awaiting approval or paused on
the old analysis is running again (``reanalyse`` in the audit trail). Refusals keep a started
plan's gate from measuring nothing.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from rollout.labels import reason_data
from rollout.models import Criterion, Gate, GateState, MigrationPlan, Phase, PhaseKind, PlanState
from rollout.services.analysis import analysis_start, analysis_terminate
from rollout.services.audit import Actor, audit_record
from rollout.services.errors import NotPermitted, WorkflowConflict
from rollout.services.plans import plan_lock, plan_move

# A plan whose current gate is re-measured when its criteria change (and a manual pause).
REANALYSED_FROM = (PlanState.RUNNING, PlanState.AWAITING_APPROVAL, PlanState.PAUSED)


def _gate_revise(*, phase: Phase, actor: Actor) -> list[Gate]:
    """What the open gates of ``phase`` ask approvers to approve changed: a new revision.

    Approvals (and break-glass votes, and an override request) are bound to a revision, so
    earlier ones stop counting. The plan's **current** gate also measures again: its running
    or finished analysis is voided (a passed, inconclusive or awaiting-approval gate goes back
    to analysing) and a new run starts on the step's traffic, which did not change — two
    approvals never promote a gate on measurements of criteria it no longer has.
    """
    plan = plan_lock(phase.plan_id)  # plan before gates: the order every transition locks in
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
        if gate.pk == plan.current_gate_id:
            _gate_reanalyse(plan, gate, actor=actor)
    return open_gates


def _gate_reanalyse(plan: MigrationPlan, gate: Gate, *, actor: Actor) -> None:
    """Void the current gate's analysis and measure its new revision (traffic unchanged)."""
    manual_pause = plan.state == PlanState.PAUSED and bool(plan.resume_state)
    if plan.state not in REANALYSED_FROM and not manual_pause:
        return
    if (
        plan.state == PlanState.PAUSED
        and not manual_pause
        and gate.state
        not in (
            GateState.INCONCLUSIVE,
            GateState.REJECTED,
        )
    ):
        return  # paused on the router (traffic unconfirmed): retry pushes the traffic first
    now = timezone.now()
    last = gate.runs.order_by("-started_at", "-id").first()
    analysis_terminate(gate=gate, now=now)
    gate.state = GateState.ANALYSING
    gate.requested_by = None
    gate.requested_at = None
    gate.override_of = gate.override_reason = ""
    gate.save()
    if manual_pause:
        plan.resume_state = PlanState.RUNNING  # resumes measuring, not awaiting approval
        plan.save(update_fields=["resume_state"])
    elif plan.state != PlanState.RUNNING:
        plan.resume_state = ""
        plan_move(
            plan,
            to=PlanState.RUNNING,
            action="reanalyse",
            actor=actor,
            reason="criteria changed: approvals void, the gate measures again",
            reason_data=reason_data("reanalyse"),
            obj=gate,
        )
    traffic_at = last.traffic_at if last is not None else None
    analysis_start(
        gate=gate, now=now, traffic_at=traffic_at or now, traffic_pending=traffic_at is None
    )


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
    gates = _gate_revise(phase=criterion.phase, actor=actor)
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
        left_gates = _gate_revise(phase=left, actor=actor)
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
    gates = _gate_revise(phase=phase, actor=actor)
    audit_record(
        actor=actor,
        action="criterion_delete",
        plan=phase.plan,
        obj=None,
        phase=phase,
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
    gates = _gate_revise(phase=phase, actor=actor)
    audit_record(
        actor=actor,
        action="manual_gate_on" if manual else "manual_gate_off",
        plan=phase.plan,
        obj=phase,
        reason=reason.strip() + _revisions(gates),
        reason_data=_in_words(reason_data("text", text=reason.strip()), gates),
    )
    return phase
