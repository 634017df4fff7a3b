"""Checks every workflow command makes before it acts: permission (a refusal is audited as
``<action>_denied`` and committed even though the command fails), the gate revision decided on,
and a reason where one is required. Split out of ``transitions`` to keep it readable."""

from __future__ import annotations

from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext_noop

from rollout.labels import action_label_lazy
from rollout.models import (
    Approval,
    AuditEntry,
    DeniedAttemptCount,
    Gate,
    GateState,
    MigrationPlan,
)
from rollout.services.audit import Actor, audit_record
from rollout.services.errors import NotPermitted, WorkflowConflict, WorkflowError

APPROVE_PERMISSION = "monitoring.approve_migrations"
FORCE_PERMISSION = "monitoring.force_promote_migrations"


def deny(*, actor: Actor, action: str, plan_id: int, refusal: WorkflowError) -> AuditEntry | None:
    """Audit a refusal (outside the failed command's transaction, so the row survives it).

    A principal who holds no workflow role at all (a customer, a read token) leaves one audit
    row per plan, command and hour; further refusals are counted (:class:`DeniedAttemptCount`),
    so a flood of refusals cannot push the plan's history off its page.
    """
    plan = MigrationPlan.objects.filter(pk=plan_id).first()
    if (
        plan is not None
        and actor.holds_no_workflow_role()
        and not _first_this_hour(actor=actor, action=action, plan=plan)
    ):
        return None
    with transaction.atomic():
        return audit_record(
            actor=actor,
            action=f"{action}_denied",
            plan=plan,
            from_state=plan.state if plan else "",
            to_state=plan.state if plan else "",
            reason=refusal.english,
            reason_data=refusal.reason_data,
        )


def _first_this_hour(*, actor: Actor, action: str, plan: MigrationPlan) -> bool:
    """Count this refusal; whether it is the first of its (plan, action, principal, hour)."""
    now = timezone.now()
    with transaction.atomic():
        row, created = DeniedAttemptCount.objects.get_or_create(
            plan=plan,
            action=action,
            principal=actor.label[:200],
            hour=now.replace(minute=0, second=0, microsecond=0),
            defaults={"count": 1, "last_at": now},
        )
        if not created:
            DeniedAttemptCount.objects.filter(pk=row.pk).update(count=F("count") + 1, last_at=now)
    return created


def need(actor: Actor, *, capability: str, action: str, plan_id: int) -> None:
    checks = {"approve": actor.can_approve, "force": actor.can_force, "operate": actor.can_operate}
    if not checks[capability]():
        if capability == "approve" and actor.token is not None and actor.user is None:
            refusal = NotPermitted(gettext_noop("the token acts for nobody who may approve"))
        elif actor.token is not None and capability != "approve":
            refusal = NotPermitted(gettext_noop("tokens cannot %(action)s: sign in"), action=action)
        else:
            refusal = NotPermitted(
                gettext_noop("lacks the %(capability)s permission"), capability=capability
            )
        deny(actor=actor, action=action, plan_id=plan_id, refusal=refusal)
        raise refusal


def need_revision(gate: Gate, revision: int | None) -> None:
    if revision is None:
        raise WorkflowConflict(gettext_noop("name the gate revision you are deciding on"))
    if revision != gate.revision:
        raise WorkflowConflict(
            gettext_noop("the gate is at revision %(revision)s, you decided on %(sent)s; reload"),
            revision=gate.revision,
            sent=revision,
        )


def need_reason(reason: str, action: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise WorkflowConflict(
            gettext_noop("%(action)s needs a reason"), action=action_label_lazy(action)
        )
    return reason


def people_still_holding(votes, permission: str) -> int:
    """How many distinct people behind ``votes`` (Approval rows) still hold ``permission``.

    An approval or a break-glass vote counts only while its author is active and holds the
    role when the gate decides: approver1 approves, loses the group, and their approval stops
    counting (approver2's then is one of two, not the second). Checked with ``has_perm``, the
    same rule as the command's own permission check.
    """
    people = {vote.user for vote in votes.exclude(user=None).select_related("user")}
    return sum(1 for person in people if person.is_active and person.has_perm(permission))


def admin_forced_alone_before(gate: Gate) -> bool:
    """Whether an earlier gate of this plan was forced by one person alone (a superuser):
    that shortcut exists once per plan; later steps need a second person."""
    forced = Gate.objects.filter(plan_id=gate.plan_id, state=GateState.FORCED).exclude(pk=gate.pk)
    for earlier in forced:
        voters = (
            Approval.objects.filter(
                gate=earlier, revision=earlier.revision, decision=Approval.Decision.FORCE
            )
            .values("user")
            .distinct()
            .count()
        )
        if voters <= 1:
            return True
    return False
