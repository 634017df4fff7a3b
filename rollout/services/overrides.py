"""Promoting past an analysis that did not pass: its own command, never a plain promotion.

``promote`` asks approvers to promote a **passed** gate. A gate whose analysis ended
Inconclusive (the plan paused for a human) or Failed (the plan rolled back) moves on only
through ``override``: the operate permission, a reason, the gate revision the person saw, and
the four-eyes approvals every promotion needs — each of them recorded as an override approval
(``Approval.override``) and audited as ``approve_override`` with the outcome overridden, so the
audit trail, the plan's page, the API and the admin desk all say "override" where it happened.
The requester never approves their own override. Pages, the API (``plans_override``) and the
admin call this one function through :func:`rollout.services.commands.plan_command`.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from rollout.labels import reason_data, state_label_lazy
from rollout.models import GateState, MigrationPlan, PlanState
from rollout.services.audit import Actor
from rollout.services.errors import WorkflowConflict
from rollout.services.guards import need as _need
from rollout.services.guards import need_reason as _need_reason
from rollout.services.plans import plan_gate_lock, plan_move

# The analysis outcomes an override can promote past, and the plan state each leaves.
OVERRIDABLE = {GateState.INCONCLUSIVE: PlanState.PAUSED, GateState.FAILED: PlanState.ROLLED_BACK}


def plan_override(
    *,
    plan_id: int,
    actor: Actor,
    reason: str,
    revision: int | None,
    expected_version: int | None = None,
) -> MigrationPlan:
    """Request promotion past the current gate's Inconclusive or Failed analysis."""
    _need(actor, capability="operate", action="override", plan_id=plan_id)
    reason = _need_reason(reason, "override")
    with transaction.atomic():
        plan, gate = plan_gate_lock(
            plan_id, "override", expected_version=expected_version, revision=revision
        )
        if OVERRIDABLE.get(gate.state) != plan.state or plan.resume_state:
            raise WorkflowConflict(
                gettext_noop(
                    "the gate is %(state)s: an override promotes past an inconclusive or "
                    "failed analysis only (a passed one is promoted, a manual pause resumed)"
                ),
                state=state_label_lazy(gate.state, dict(GateState.choices)),
            )
        outcome = "inconclusive" if gate.state == GateState.INCONCLUSIVE else "failed"
        gate.override_of = outcome
        gate.override_reason = reason
        gate.state = GateState.AWAITING_APPROVAL
        gate.requested_by = actor.user
        gate.requested_at = timezone.now()
        gate.save()
        plan_move(
            plan,
            to=PlanState.AWAITING_APPROVAL,
            action="override",
            actor=actor,
            reason=f"override of an analysis that was {outcome}: {reason}",
            reason_data=reason_data("override_request", outcome=outcome, comment=reason),
            events=("awaiting_approval",),
            obj=gate,
        )
    return plan
