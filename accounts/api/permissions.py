"""Scope checks shared by every API view.

A view names the scope it needs (``required_scope``). Tokens must carry that scope; browser
sessions map roles onto scopes: every logged-in user may ``read`` (their own tenant's data),
only operators may ``ingest``, only approvers may ``approve``.
"""

from __future__ import annotations

from rest_framework.permissions import BasePermission

from accounts.api.authentication import IntegrationPrincipal

SESSION_SCOPE_PERMISSION = {
    "read": None,
    "ingest": "monitoring.operate_cluster",
    "approve": "monitoring.approve_migrations",
}


def principal_has_scope(user, scope: str) -> bool:
    """Whether ``user`` (a session user or a token) holds ``scope``.

    A token acts for its owner and never holds more than they do: ``approve`` on a token
    counts only while the owner is an active user holding the approver permission.
    """
    if isinstance(user, IntegrationPrincipal):
        if scope not in user.scopes:
            return False
        if scope == "approve":
            owner = user.owner
            return owner is not None and owner.is_active and principal_has_scope(owner, scope)
        return True
    if not getattr(user, "is_authenticated", False):
        return False
    needed = SESSION_SCOPE_PERMISSION[scope]
    return needed is None or user.has_perm(needed)


class HasRequiredScope(BasePermission):
    message = "This credential lacks the scope this endpoint requires."

    def has_permission(self, request, view) -> bool:
        scope = getattr(view, "required_scope", "read")
        if not principal_has_scope(request.user, scope):
            self.message = f"This endpoint requires the '{scope}' scope."
            return False
        return True
