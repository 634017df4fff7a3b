"""Scope checks shared by every API view.

A view names the scope it needs (``required_scope``). Browser sessions map roles onto scopes:
every logged-in user may ``read`` (their own tenant's data), only operators may ``ingest``,
only approvers may ``approve``. A token must carry the scope **and** act for an owner who holds
it as a person, on every request (``accounts.services.authority``).
"""

from __future__ import annotations

from rest_framework.permissions import BasePermission

from accounts.api.authentication import IntegrationPrincipal
from accounts.services.authority import (
    SCOPE_PERMISSION,
    token_refusal,
    token_scope_refusal,
    user_holds_scope,
)

# Kept under its historical name for callers that map scopes onto permissions.
SESSION_SCOPE_PERMISSION = SCOPE_PERMISSION


def scope_refusal(user, scope: str) -> str | None:
    """Why ``user`` (a session user or a token) may not use ``scope`` now, or ``None``."""
    if isinstance(user, IntegrationPrincipal):
        refusal = token_refusal(user.token) or token_scope_refusal(user.token, scope)
        return refusal.message if refusal is not None else None
    if not user_holds_scope(user, scope):
        return f"This endpoint requires the '{scope}' scope."
    return None


def principal_has_scope(user, scope: str) -> bool:
    """Whether ``user`` (a session user or a token) holds ``scope``.

    A token acts for its owner and never holds more than they do, for every scope: the owner
    is active, reaches the token's tenant and holds the role the scope needs.
    """
    return scope_refusal(user, scope) is None


class HasRequiredScope(BasePermission):
    message = "This credential lacks the scope this endpoint requires."

    def has_permission(self, request, view) -> bool:
        scope = getattr(view, "required_scope", "read")
        refusal = scope_refusal(request.user, scope)
        if refusal is not None:
            self.message = refusal
            return False
        return True
