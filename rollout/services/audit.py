"""Who is acting (a user, an integration token or the system) and the audit rows they leave."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import models
from django.utils import translation

from accounts.api.permissions import principal_has_scope
from accounts.selectors.people import role_of
from rollout.models import AuditEntry, Gate, MigrationPlan, Phase, PhaseKind


@dataclass(frozen=True)
class Actor:
    """A principal plus the address the request came from; ``principal=None`` is the system."""

    principal: object | None = None
    ip: str | None = None

    @classmethod
    def from_request(cls, request) -> Actor:
        # REMOTE_ADDR, not X-Forwarded-For: the header is client-controlled unless a trusted
        # proxy rewrites it, and an audit trail must not record what the client claims.
        return cls(principal=request.user, ip=request.META.get("REMOTE_ADDR") or None)

    @property
    def token(self):
        """The integration token the request came with, or ``None``."""
        return getattr(self.principal, "token", None)

    @property
    def user(self):
        """The **person** acting: the session user, or the user a token acts for.

        A token without an (active) owner acts for nobody. Four-eyes, "one approval per
        person" and the audit's ``actor`` all compare this, never the credential.
        """
        principal = self.principal
        if principal is None:
            return None
        if self.token is not None:
            owner = getattr(principal, "owner", None)
            return owner if owner is not None and owner.is_active else None
        return principal if getattr(principal, "pk", None) is not None else None

    @property
    def label(self) -> str:
        if self.principal is None:
            return "system"
        if self.token is not None:
            person = self.user
            name = f"token:{self.token.name}"
            return f"{person.username} ({name})" if person is not None else name
        return str(getattr(self.principal, "username", None) or self.principal)

    @property
    def role(self) -> str:
        """What a customer is told instead of the person: ``operator``, ``approver``, ``system``
        … (English: it goes into machine-read payloads, whatever the request's language)."""
        with translation.override("en"):
            return str(role_of(self.user, self.label))

    def can_operate(self) -> bool:
        """Operating needs a signed-in operator: tokens never operate plans."""
        user = self.user
        return self.principal is None or (
            self.token is None and user is not None and user.has_perm("monitoring.operate_cluster")
        )

    def can_approve(self) -> bool:
        """A person holding the approver permission; through a token only with ``approve``."""
        return (
            self.principal is not None
            and self.user is not None
            and principal_has_scope(self.principal, "approve")
        )

    def can_force(self) -> bool:
        """Break-glass: a signed-in person holding its own permission (never a token)."""
        user = self.user
        return (
            self.token is None
            and user is not None
            and user.has_perm("monitoring.force_promote_migrations")
        )

    def holds_no_workflow_role(self) -> bool:
        """A principal who can neither operate, approve nor force anything (a customer, a read
        token): their refusals are counted rather than audited one by one."""
        return self.principal is not None and not (
            self.can_operate() or self.can_approve() or self.can_force()
        )

    @property
    def is_admin(self) -> bool:
        user = self.user
        return self.token is None and user is not None and user.is_superuser


SYSTEM = Actor()


def phase_touched(
    obj: models.Model | None, plan: MigrationPlan | None, phase: Phase | None = None
) -> tuple[str | None, int | None]:
    """``(phase kind, gray step %)`` an audit row touches: the given phase, else the gate's
    (the object's own gate, or the gate it belongs to: an approval, a run, a criterion's
    phase), else the phase object, else where the plan stands; ``(None, None)`` for none."""
    gate = obj if isinstance(obj, Gate) else getattr(obj, "gate", None)
    if phase is None and isinstance(gate, Gate):
        plan = gate.plan
        phase = gate.phase
        if phase.kind == PhaseKind.GRAY and gate.step_index < len(plan.gray_steps):
            return phase.kind, plan.gray_steps[gate.step_index]
        return phase.kind, None
    if phase is None:
        phase = obj if isinstance(obj, Phase) else getattr(obj, "phase", None)
    if isinstance(phase, Phase):
        return phase.kind, None
    if plan is not None and plan.current_phase:
        return plan.current_phase, plan.current_step_percent
    return None, None


def audit_record(
    *,
    actor: Actor,
    action: str,
    plan: MigrationPlan | None,
    obj: models.Model | None = None,
    from_state: str = "",
    to_state: str = "",
    reason: str = "",
    reason_data: dict | None = None,
    phase: Phase | None = None,
) -> AuditEntry:
    """Append one audit row (the only way rows are written).

    The row names the phase it touches (:func:`phase_touched`; ``phase`` names it where
    neither ``obj`` nor the plan can, e.g. a deleted criterion's phase).

    ``reason_data``: the reason as a code and parameters (rollout/labels.py) when the
    workflow wrote it, so pages can show it in the reader's language.
    """
    target = obj if obj is not None else plan
    touched, step = phase_touched(obj, plan, phase)
    return AuditEntry.objects.create(
        actor=actor.user,
        actor_label=actor.label,
        action=action,
        object_type=target._meta.model_name if target is not None else "",
        object_id=target.pk if target is not None else None,
        plan=plan,
        from_state=from_state,
        to_state=to_state,
        reason=reason,
        reason_data=reason_data,
        source_ip=actor.ip,
        phase=touched,
        gray_step_percent=step,
    )
