"""DRF authentication for integration tokens (``Authorization: Bearer cp_…``).

Every request re-checks the token against its owner (``accounts.services.authority``): a
revoked or expired token, or one whose owner is deactivated, is a 401; one whose owner no longer
reaches the token's tenant a 403 — before any view runs, whatever its permission classes.
"""

from __future__ import annotations

from django.utils.translation import gettext as _
from rest_framework import authentication, exceptions

from accounts.models import IntegrationToken
from accounts.services.tokens import TokenRefused, token_authenticate


class IntegrationPrincipal:
    """Stands in for ``request.user`` when a request authenticates with a token.

    It is deliberately not a ``User``: a token has scopes, not Django permissions, and is never
    staff unless it is an operator-level token (no tenant).
    """

    is_authenticated = True
    is_anonymous = False
    is_active = True
    is_superuser = False
    pk = None
    id = None

    def __init__(self, token: IntegrationToken) -> None:
        self.token = token
        self.tenant = token.tenant
        self.tenant_id = token.tenant_id
        self.scopes = frozenset(token.scopes)
        self.username = f"token:{token.name}"
        # The person the token acts for (None: acts for nobody and can never approve).
        self.owner = token.owner

    @property
    def sees_all_tenants(self) -> bool:
        return self.tenant_id is None

    def has_perm(self, perm: str, obj: object = None) -> bool:
        return False

    def __str__(self) -> str:
        return self.username


class IntegrationTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode(errors="replace")
        if not header:
            return None
        parts = header.split()
        if parts[0].lower() not in ("bearer", "token"):
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed(
                _("Malformed Authorization header: expected 'Bearer <token>'.")
            )
        try:
            token = token_authenticate(parts[1])
        except TokenRefused as refused:
            if refused.refusal.status == 403:
                raise exceptions.PermissionDenied(refused.refusal.message) from None
            raise exceptions.AuthenticationFailed(refused.refusal.message) from None
        return IntegrationPrincipal(token), token

    def authenticate_header(self, request) -> str:
        return self.keyword
