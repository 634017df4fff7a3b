"""The commands people (and tokens acting for people) give a plan; each is one locked,
audited transition. Pages, the API and the admin call these same functions with the same
arguments.

Every command takes ``plan_id`` and an optional ``expected_version``: a client that sends the
version it saw gets a 409 when someone else moved the plan in between. Decisions on a gate
(approve, reject, force) must also name the gate ``revision`` the person saw — what they are
deciding on — and get a 409 when it moved. Denied attempts (missing permission or scope,
four-eyes) are audited too (``<action>_denied``) and committed even though the command fails.

**Approvals belong to people.** ``Actor.user`` is the person (a token counts as the user it
acts for); four-eyes compares people: the requester of a promotion never approves it, each
person decides once per revision, and N approvals mean N distinct people **who still hold the
approver role when the gate decides** (an approval whose author lost the role stops counting).

**Break-glass** (``force_promote``) needs its own permission
(``monitoring.force_promote_migrations``, no role carries it by default), a reason and the
revision; it is a vote recorded on the gate, and the gate is forced when
``required_approvals`` distinct people (never the promotion's requester) voted on the same
revision (and still hold the permission). A superuser forces one step alone, once per plan;
every later step needs a second person's vote, as break-glass does for everyone else. Either
way it moves exactly one step.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from rollout.labels import reason_data, state_label_lazy
from rollout.models import (
    PHASE_ORDER,
    Approval,
    Gate,
    GateState,
    MigrationPlan,
    PhaseKind,
    PlanState,
)
from rollout.services.analysis import analysis_terminate
from rollout.services.audit import Actor, audit_record
from rollout.services.errors import (
    FourEyesViolation,
    WorkflowConflict,
)
from rollout.services.guards import (
    APPROVE_PERMISSION,
    FORCE_PERMISSION,
    admin_forced_alone_before,
    people_still_holding,
)
from rollout.services.guards import deny as _deny
from rollout.services.guards import need as _need
from rollout.services.guards import need_reason as _need_reason
from rollout.services.plans import (
    gate_open,
    phase_of,
    phases_without_gate,
    plan_gate_lock,
    plan_lock,
    plan_move,
    require_state,
    traffic_apply,
    traffic_mark_stable,
    traffic_withdraw,
)
from rollout.services.router_dispatch import router_intents_dispatch
from rollout.services.stepping import step_traffic_start
from rollout.services.traffic import require_routable, restore_verified


def plan_start(*, plan_id: int, actor: Actor, expected_version: int | None = None) -> MigrationPlan:
    _need(actor, capability="operate", action="start", plan_id=plan_id)
    with transaction.atomic():
        plan = plan_lock(plan_id, expected_version=expected_version)
        require_state(plan, "start")
        ungated = phases_without_gate(plan)
        if ungated:
            raise WorkflowConflict(
                gettext_noop(
                    "these phases have no decisive criteria and no explicit manual gate: %(phases)s"
                ),
                phases=", ".join(ungated),
            )
        now = timezone.now()
        plan.current_phase = PhaseKind.PILOT
        pilot = phase_of(plan, PhaseKind.PILOT)
        pilot.actual_start = now
        pilot.save(update_fields=["actual_start"])
        require_routable(plan)
        traffic_apply(plan)
        gate = gate_open(plan, kind=PhaseKind.PILOT)
        step_traffic_start(plan, gate, actor=actor, action="start", now=now)
    return _routed(plan, actor)


def plan_promote(
    *, plan_id: int, actor: Actor, reason: str = "", expected_version: int | None = None
) -> MigrationPlan:
    """Request promotion past the current gate, whose analysis passed.

    Past an Inconclusive or Failed analysis is an override: its own command
    (:func:`rollout.services.overrides.plan_override`), with a reason, marked on every approval.
    """
    _need(actor, capability="operate", action="promote", plan_id=plan_id)
    with transaction.atomic():
        plan, gate = plan_gate_lock(plan_id, "promote", expected_version=expected_version)
        if gate.state != GateState.PASSED or plan.state != PlanState.RUNNING:
            raise WorkflowConflict(
                gettext_noop(
                    "the gate is %(state)s: promotion needs a passed analysis "
                    "(past an inconclusive or failed one, use override, with a reason)"
                ),
                state=state_label_lazy(gate.state, dict(GateState.choices)),
            )
        gate.state = GateState.AWAITING_APPROVAL
        gate.requested_by = actor.user
        gate.requested_at = timezone.now()
        gate.save(update_fields=["state", "requested_by", "requested_at"])
        plan_move(
            plan,
            to=PlanState.AWAITING_APPROVAL,
            action="promote",
            actor=actor,
            reason=reason,
            events=("awaiting_approval",),
            obj=gate,
        )
    return plan


def gate_approve(
    *,
    plan_id: int,
    actor: Actor,
    revision: int | None,
    comment: str = "",
    expected_version: int | None = None,
) -> MigrationPlan:
    """Record one person's approval of gate ``revision``; the N-th person promotes the plan.

    Four-eyes: the person who requested the promotion cannot approve it (403 + audit row);
    a second approval by the same person (through any credential) is a 409.
    """
    _need(actor, capability="approve", action="approve", plan_id=plan_id)
    denial = None
    with transaction.atomic():
        plan, gate = plan_gate_lock(
            plan_id, "approve", expected_version=expected_version, revision=revision
        )
        user = actor.user
        decided = gate.approvals.filter(
            revision=gate.revision,
            user=user,
            decision__in=(Approval.Decision.APPROVE, Approval.Decision.REJECT),
        )
        if gate.requested_by_id == user.pk:
            denial = FourEyesViolation(
                gettext_noop("four-eyes: the requester of a promotion cannot approve it")
            )
        elif decided.exists():
            raise WorkflowConflict(gettext_noop("you already decided on this revision of the gate"))
        else:
            override = bool(gate.override_of)
            Approval.objects.create(
                gate=gate,
                revision=gate.revision,
                user=user,
                principal=actor.label,
                decision=Approval.Decision.APPROVE,
                comment=comment,
                override=override,
            )
            # Only people who still hold the approver role count (an approver who lost it
            # since approving no longer does).
            approvals = people_still_holding(
                gate.approvals.filter(revision=gate.revision, decision=Approval.Decision.APPROVE),
                APPROVE_PERMISSION,
            )
            # An override says so on every approval: in the audit, the page and the API.
            action = "approve_override" if override else "approve"
            counted = f"{approvals}/{plan.required_approvals}"
            if override:
                text = f"override {counted} of an analysis that was {gate.override_of}: {comment}"
                words = reason_data(
                    "override_vote",
                    count=approvals,
                    required=plan.required_approvals,
                    outcome=gate.override_of,
                    comment=comment,
                )
            else:
                text = f"{counted}: {comment}"
                words = reason_data(
                    "vote", count=approvals, required=plan.required_approvals, comment=comment
                )
            if approvals >= plan.required_approvals:
                _advance(plan, gate, actor=actor, action=action, reason=text.strip())
            else:
                audit_record(
                    actor=actor,
                    action=action,
                    plan=plan,
                    obj=gate,
                    from_state=plan.state,
                    to_state=plan.state,
                    reason=text.strip(),
                    reason_data=words,
                )
    if denial:
        _deny(actor=actor, action="approve", plan_id=plan_id, refusal=denial)
        raise denial
    return _routed(plan, actor)


def gate_reject(
    *,
    plan_id: int,
    actor: Actor,
    reason: str,
    revision: int | None,
    expected_version: int | None = None,
) -> MigrationPlan:
    """Reject gate ``revision`` (with a reason); the person's approval, if any, becomes this."""
    _need(actor, capability="approve", action="reject", plan_id=plan_id)
    reason = _need_reason(reason, "reject")
    with transaction.atomic():
        plan, gate = plan_gate_lock(
            plan_id, "reject", expected_version=expected_version, revision=revision
        )
        Approval.objects.update_or_create(
            gate=gate,
            revision=gate.revision,
            user=actor.user,
            decision__in=(Approval.Decision.APPROVE, Approval.Decision.REJECT),
            defaults={
                "principal": actor.label,
                "decision": Approval.Decision.REJECT,
                "comment": reason,
            },
            create_defaults={
                "gate": gate,
                "revision": gate.revision,
                "user": actor.user,
                "principal": actor.label,
                "decision": Approval.Decision.REJECT,
                "comment": reason,
            },
        )
        gate.state = GateState.REJECTED
        gate.decided_at = timezone.now()
        gate.save(update_fields=["state", "decided_at"])
        plan.resume_state = ""
        plan_move(plan, to=PlanState.PAUSED, action="reject", actor=actor, reason=reason, obj=gate)
    return plan


def plan_pause(
    *, plan_id: int, actor: Actor, reason: str = "", expected_version: int | None = None
) -> MigrationPlan:
    _need(actor, capability="operate", action="pause", plan_id=plan_id)
    with transaction.atomic():
        plan = plan_lock(plan_id, expected_version=expected_version)
        require_state(plan, "pause")
        plan.resume_state = plan.state
        plan_move(plan, to=PlanState.PAUSED, action="pause", actor=actor, reason=reason)
    return plan


def plan_resume(
    *, plan_id: int, actor: Actor, reason: str = "", expected_version: int | None = None
) -> MigrationPlan:
    """Undo a manual pause; a gate paused on its analysis or a rejection needs ``retry``."""
    _need(actor, capability="operate", action="resume", plan_id=plan_id)
    with transaction.atomic():
        plan = plan_lock(plan_id, expected_version=expected_version)
        require_state(plan, "resume")
        if not plan.resume_state:
            raise WorkflowConflict(
                gettext_noop(
                    "this pause is a gate decision (inconclusive or rejected): "
                    "override, retry or abort"
                )
            )
        to = plan.resume_state
        plan.resume_state = ""
        plan_move(plan, to=to, action="resume", actor=actor, reason=reason)
    return plan


def plan_retry(
    *, plan_id: int, actor: Actor, reason: str = "", expected_version: int | None = None
) -> MigrationPlan:
    """Analyse the current gate again under a new revision (earlier approvals lapse), after
    pushing the step's share to every real router again and reading it back — whatever
    paused the plan (an inconclusive or rejected gate, a router that failed or lost the share,
    a person's pause): the new analysis measures traffic the routers confirm now."""
    _need(actor, capability="operate", action="retry", plan_id=plan_id)
    with transaction.atomic():
        plan, gate = plan_gate_lock(plan_id, "retry", expected_version=expected_version)
        now = timezone.now()
        analysis_terminate(gate=gate, now=now)
        gate.revision += 1
        gate.state = GateState.ANALYSING
        gate.requested_by = None
        gate.requested_at = gate.decided_at = None
        gate.override_of = gate.override_reason = ""
        gate.save()
        traffic_apply(plan)  # after a rollback the step's traffic goes back on
        step_traffic_start(
            plan, gate, actor=actor, action="retry", now=now, reason=reason, obj=gate, force=True
        )
    return _routed(plan, actor)


def plan_abort(
    *, plan_id: int, actor: Actor, reason: str, expected_version: int | None = None
) -> MigrationPlan:
    _need(actor, capability="operate", action="abort", plan_id=plan_id)
    reason = _need_reason(reason, "abort")
    with transaction.atomic():
        plan = plan_lock(plan_id, expected_version=expected_version)
        require_state(plan, "abort")
        if plan.current_gate_id:
            gate = Gate.objects.select_for_update().get(pk=plan.current_gate_id)
            analysis_terminate(gate=gate, now=timezone.now())
            if gate.state not in (GateState.FAILED,):
                gate.state = GateState.ABORTED
                gate.save(update_fields=["state"])
        # Abort is not "stay here": the source takes everything back (share 0 on every
        # target, the approved steps included), verified on every router by read-back and,
        # where the router has counters, by the target getting no new request; else
        # "rollback unconfirmed" (alerts). Stopping without moving traffic is ``pause``.
        traffic_withdraw(plan)
        restore_verified(
            plan, to=PlanState.ABORTED, action="abort", actor=actor, reason=reason,
            events=("aborted",),
        )  # fmt: skip
    return _routed(plan, actor)


def plan_rollback_verify(
    *, plan_id: int, actor: Actor, reason: str = "", expected_version: int | None = None
) -> MigrationPlan:
    """Push and read back the restored shares again; verified, the plan reaches the state its
    abort or rollback was heading to (aborted, rolled back); else it stays unconfirmed."""
    _need(actor, capability="operate", action="verify_rollback", plan_id=plan_id)
    with transaction.atomic():
        plan = plan_lock(plan_id, expected_version=expected_version)
        require_state(plan, "verify_rollback")
        to = plan.resume_state or PlanState.ROLLED_BACK
        events = ("aborted",) if to == PlanState.ABORTED else ()
        restore_verified(
            plan, to=to, action="verify_rollback", actor=actor, reason=reason, events=events
        )
    return _routed(plan, actor)


def plan_force_promote(
    *,
    plan_id: int,
    actor: Actor,
    reason: str,
    revision: int | None,
    expected_version: int | None = None,
) -> MigrationPlan:
    """Break-glass: past the current gate without analysis, one step per decision.

    Needs the break-glass permission, a reason and the gate revision. A superuser's decision
    forces the plan's first forced step at once; after that a superuser's vote needs one more
    person's. Otherwise it is a vote, and the gate is forced when ``required_approvals``
    distinct people (never the promotion's requester, all still holding the permission) voted
    on this revision. Every vote and the forcing itself are audited.
    """
    _need(actor, capability="force", action="force_promote", plan_id=plan_id)
    reason = _need_reason(reason, "force_promote")
    denial = None
    with transaction.atomic():
        plan, gate = plan_gate_lock(
            plan_id, "force_promote", expected_version=expected_version, revision=revision
        )
        user = actor.user
        votes = gate.approvals.filter(revision=gate.revision, decision=Approval.Decision.FORCE)
        if gate.requested_by_id == user.pk:
            denial = FourEyesViolation(
                gettext_noop("four-eyes: the requester of a promotion cannot force it")
            )
        elif votes.filter(user=user).exists():
            raise WorkflowConflict(
                gettext_noop("you already voted to force this revision of the gate")
            )
        else:
            Approval.objects.create(
                gate=gate,
                revision=gate.revision,
                user=user,
                principal=actor.label,
                decision=Approval.Decision.FORCE,
                comment=reason,
            )
            count = people_still_holding(votes, FORCE_PERMISSION)
            # A superuser forces one step alone, once per plan; every later step needs a
            # second person's break-glass vote (never four force-promotes in a second).
            alone = actor.is_admin and count == 1 and not admin_forced_alone_before(gate)
            required = 2 if actor.is_admin else plan.required_approvals
            if alone or count >= required:
                analysis_terminate(gate=gate, now=timezone.now())
                how = "admin" if alone else f"{count}/{required}"
                _advance(
                    plan,
                    gate,
                    actor=actor,
                    action="force_promote",
                    reason=f"break-glass ({how}): {reason}",
                    forced=True,
                )
            else:
                audit_record(
                    actor=actor,
                    action="force_promote_vote",
                    plan=plan,
                    obj=gate,
                    from_state=plan.state,
                    to_state=plan.state,
                    reason=f"break-glass {count}/{required}: {reason}",
                    reason_data=reason_data(
                        "break_glass", count=count, required=required, comment=reason
                    ),
                )
    if denial:
        _deny(actor=actor, action="force_promote", plan_id=plan_id, refusal=denial)
        raise denial
    return _routed(plan, actor)


def gate_skip(
    *, plan_id: int, actor: Actor, reason: str, expected_version: int | None = None
) -> MigrationPlan:
    """Skip the running analysis: the gate counts as passed; approvals are still needed."""
    _need(actor, capability="operate", action="skip", plan_id=plan_id)
    reason = _need_reason(reason, "skip")
    with transaction.atomic():
        plan, gate = plan_gate_lock(plan_id, "skip", expected_version=expected_version)
        if gate.state != GateState.ANALYSING:
            raise WorkflowConflict(
                gettext_noop("the gate is %(state)s: only a running analysis is skipped"),
                state=state_label_lazy(gate.state, dict(GateState.choices)),
            )
        analysis_terminate(gate=gate, now=timezone.now())
        gate.state = GateState.PASSED
        gate.save(update_fields=["state"])
        plan.version += 1
        plan.save(update_fields=["version"])
        audit_record(
            actor=actor,
            action="skip",
            plan=plan,
            obj=gate,
            from_state=GateState.ANALYSING,
            to_state=GateState.PASSED,
            reason=reason,
        )
    return plan


def _routed(plan: MigrationPlan, actor: Actor) -> MigrationPlan:
    """After the transition committed: send the router calls it intended (outside its
    transaction, each answer committed on its own) and return the plan as they left it."""
    router_intents_dispatch(plan.pk, actor=actor)
    plan.refresh_from_db()  # another dispatcher may have committed what this one waited for
    return plan


def _advance(
    plan: MigrationPlan,
    gate: Gate,
    *,
    actor: Actor,
    action: str,
    reason: str,
    forced: bool = False,
) -> None:
    """Close ``gate`` and move to the next gray step, the next phase, or completion."""
    now = timezone.now()
    gate.state = GateState.FORCED if forced else GateState.APPROVED
    gate.decided_at = now
    gate.save(update_fields=["state", "decided_at"])
    traffic_mark_stable(plan)
    kind = plan.current_phase
    last_step = plan.gray_step_index >= len(plan.gray_steps) - 1
    if kind == PhaseKind.GRAY and not last_step:
        plan.gray_step_index += 1
        next_gate = (PhaseKind.GRAY, plan.gray_step_index)
    elif kind == PhaseKind.FULL:
        next_gate = None
    else:
        phase = phase_of(plan, kind)
        phase.actual_end = now
        phase.save(update_fields=["actual_end"])
        kind = PHASE_ORDER[PHASE_ORDER.index(kind) + 1]
        plan.current_phase = kind
        phase = phase_of(plan, kind)
        phase.actual_start = now
        phase.save(update_fields=["actual_start"])
        next_gate = (kind, plan.gray_step_index if kind == PhaseKind.GRAY else 0)
    if next_gate is None:
        phase = phase_of(plan, PhaseKind.FULL)
        phase.actual_end = now
        phase.save(update_fields=["actual_end"])
        plan_move(
            plan,
            to=PlanState.SUCCEEDED,
            action=action,
            actor=actor,
            reason=reason,
            events=("completed",),
            obj=gate,
        )
        return
    traffic_apply(plan)
    opened = gate_open(plan, kind=next_gate[0], step_index=next_gate[1])
    # The next step runs only once its router confirmed the new share; else the plan pauses.
    step_traffic_start(plan, opened, actor=actor, action=action, now=now, reason=reason, obj=gate)
