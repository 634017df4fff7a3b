"""Creating, verifying, rotating and revoking integration tokens."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.models import IntegrationToken, Tenant, TokenEvent, User
from accounts.models.tokens import max_token_lifetime
from accounts.services.authority import Refusal, token_event_record, token_refusal

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
    expires_at: datetime | None = None,
    cause: str = TokenEvent.Cause.REQUESTED,
) -> IssuedToken:
    """Issue a token acting for ``owner`` (default: ``created_by``), optionally expiring.

    Raises ``ValidationError`` naming the bad field, writing nothing. Audited (``issued``).
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
        expires_at=expires_at,
    )
    token.full_clean()
    token.save()
    token_event_record(token=token, action=TokenEvent.Action.ISSUED, cause=cause, actor=created_by)
    return IssuedToken(token=token, plaintext=plaintext)


class TokenRefused(Exception):
    """The presented secret does not authenticate: ``refusal`` says why (status and text)."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


def token_authenticate(plaintext: str) -> IntegrationToken:
    """The token matching ``plaintext``, checked for this request: not revoked, not expired,
    its owner active and still reaching the token's tenant. Raises :class:`TokenRefused`."""
    parts = plaintext.split("_", 2)
    unknown = TokenRefused(Refusal(401, _("Invalid or revoked token.")))
    if len(parts) != 3 or parts[0] != TOKEN_PREFIX:
        raise unknown
    token = (
        IntegrationToken.objects.select_related("tenant", "owner")
        .filter(prefix=parts[1], revoked_at__isnull=True)
        .first()
    )
    if token is None or not hmac.compare_digest(token.secret_hash, _hash(plaintext)):
        raise unknown
    refusal = token_refusal(token)
    if refusal is not None:
        raise TokenRefused(refusal)
    # Throttle the write: one update per minute is enough to show "last used".
    now = timezone.now()
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
        IntegrationToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token


@transaction.atomic
def token_revoke(
    *,
    token: IntegrationToken,
    actor: User | None = None,
    cause: str = TokenEvent.Cause.REQUESTED,
) -> IntegrationToken:
    """Revoke ``token`` at once (audited). Revoking a revoked token changes nothing."""
    if token.revoked_at is not None:
        return token
    token.revoke()
    token.save(update_fields=["revoked_at"])
    token_event_record(token=token, action=TokenEvent.Action.REVOKED, cause=cause, actor=actor)
    return token


@transaction.atomic
def token_rotate(*, token: IntegrationToken, created_by: User | None = None) -> IssuedToken:
    """Revoke ``token`` and issue a replacement with the same name, tenant, scopes and owner.

    Rotation never widens or transfers authority: the replacement acts for the same person
    (who decides whether to rotate is :func:`accounts.api.tokens.token_manageable_by`). A token
    that expires keeps its lifetime: the replacement expires as long after now as the old one
    did after its creation (so rotating renews it, never makes it permanent), within the
    maximum lifetime (``TOKEN_MAX_LIFETIME_DAYS``; a far-future expiry is capped, not an error).
    """
    expires_at = None
    if token.expires_at is not None:
        now = timezone.now()
        lifetime = max(token.expires_at - token.created_at, _ONE_MINUTE)
        longest = max_token_lifetime() or _CALENDAR_LEFT(now)
        expires_at = now + min(lifetime, longest, _CALENDAR_LEFT(now))
    token_revoke(token=token, actor=created_by, cause=TokenEvent.Cause.ROTATED)
    return token_create(
        name=token.name,
        scopes=list(token.scopes),
        tenant=token.tenant,
        created_by=created_by,
        owner=token.owner,
        expires_at=expires_at,
        cause=TokenEvent.Cause.ROTATED,
    )


_ONE_MINUTE = timedelta(minutes=1)


def _CALENDAR_LEFT(now: datetime) -> timedelta:  # noqa: N802 - reads as the constant it bounds
    # What is left before datetime.max (a day's margin for time zones): no lifetime may pass it.
    return datetime.max.replace(tzinfo=now.tzinfo) - now - timedelta(days=1)
