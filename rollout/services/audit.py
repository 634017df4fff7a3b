"""Who is acting (a user, an integration token or the system) and the audit rows they leave."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import models

from accounts.api.permissions import principal_has_scope
from rollout.models import AuditEntry, MigrationPlan


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
    def user(self):
        principal = self.principal
        if principal is None or getattr(principal, "token", None) is not None:
            return None
        return principal if getattr(principal, "pk", None) is not None else None

    @property
    def label(self) -> str:
        if self.principal is None:
            return "system"
        return str(getattr(self.principal, "username", None) or self.principal)

    def can_operate(self) -> bool:
        user = self.user
        return self.principal is None or (
            user is not None and user.has_perm("monitoring.operate_cluster")
        )

    def can_approve(self) -> bool:
        return self.principal is not None and principal_has_scope(self.principal, "approve")


SYSTEM = Actor()


def audit_record(
    *,
    actor: Actor,
    action: str,
    plan: MigrationPlan | None,
    obj: models.Model | None = None,
    from_state: str = "",
    to_state: str = "",
    reason: str = "",
) -> AuditEntry:
    """Append one audit row (the only way rows are written)."""
    target = obj if obj is not None else plan
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
        source_ip=actor.ip,
    )
