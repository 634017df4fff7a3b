"""Who is acting — a user, an integration token or the system — as every command that keeps
an audit trail and a four-eyes rule sees it (rollout's gates, scheduling's window calendars)."""

from __future__ import annotations

from dataclasses import dataclass

from django.utils import translation

from accounts.api.permissions import principal_has_scope
from accounts.selectors.people import role_of


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
