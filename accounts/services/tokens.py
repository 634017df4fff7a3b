"""Creating, verifying, rotating and revoking integration tokens."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from accounts.models import IntegrationToken, Tenant, User

TOKEN_PREFIX = "cp"


@dataclass(frozen=True)
class IssuedToken:
    """A freshly created token: ``plaintext`` exists only here and is never stored."""

    token: IntegrationToken
    plaintext: str


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@transaction.atomic
def token_create(
    *,
    name: str,
    scopes: list[str],
    tenant: Tenant | None = None,
    created_by: User | None = None,
    owner: User | None = None,
) -> IssuedToken:
    """Issue a token acting for ``owner`` (default: ``created_by``).

    Raises ``ValidationError`` naming the bad field, writing nothing.
    """
    prefix = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    plaintext = f"{TOKEN_PREFIX}_{prefix}_{secret}"
    token = IntegrationToken(
        name=name,
        scopes=sorted(set(scopes)),
        tenant=tenant,
        prefix=prefix,
        secret_hash=_hash(plaintext),
        created_by=created_by,
        owner=owner if owner is not None else created_by,
    )
    token.full_clean()
    token.save()
    return IssuedToken(token=token, plaintext=plaintext)


def token_verify(plaintext: str) -> IntegrationToken | None:
    """Return the active token matching ``plaintext``, or ``None``."""
    parts = plaintext.split("_", 2)
    if len(parts) != 3 or parts[0] != TOKEN_PREFIX:
        return None
    token = (
        IntegrationToken.objects.select_related("tenant", "owner")
        .filter(prefix=parts[1], revoked_at__isnull=True)
        .first()
    )
    if token is None or not hmac.compare_digest(token.secret_hash, _hash(plaintext)):
        return None
    # Throttle the write: one update per minute is enough to show "last used".
    now = timezone.now()
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
        IntegrationToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token


@transaction.atomic
def token_revoke(*, token: IntegrationToken) -> IntegrationToken:
    token.revoke()
    token.save(update_fields=["revoked_at"])
    return token


@transaction.atomic
def token_rotate(*, token: IntegrationToken, created_by: User | None = None) -> IssuedToken:
    """Revoke ``token`` and issue a replacement with the same name, tenant, scopes and owner.

    Rotation never widens or transfers authority: the replacement acts for the same person
    (who decides whether to rotate is :func:`accounts.api.tokens.token_manageable_by`).
    """
    token_revoke(token=token)
    return token_create(
        name=token.name,
        scopes=list(token.scopes),
        tenant=token.tenant,
        created_by=created_by,
        owner=token.owner,
    )
