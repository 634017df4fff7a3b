"""What a token may do is what its owner may do, checked on every request.

A token acts for a person, its owner. Each request a token makes is refused unless:

* the token is neither revoked nor expired (401);
* its owner, when it has one, is active (401) and still reaches the token's tenant: an
  operator-level token (no tenant) needs an owner who sees every tenant, a tenant token an
  owner who belongs to that tenant or is staff (403);
* the scope the endpoint needs is one of the token's scopes **and** one its owner holds as a
  person: ``read`` any active user, ``ingest`` the operator role, ``approve`` the approver role
  (403). ``approve`` also needs an owner: an ownerless token approves nothing.

Ownerless tokens (``create_integration_token`` without ``--owner``: an exporter's credential,
issued by whoever runs the command on the server) act for nobody: they read and ingest as issued
and can never approve; give them an expiry.

The per-request check makes a token useless the moment its owner's authority goes. On top of
that, :func:`tokens_reconcile` revokes for good — with a :class:`~accounts.models.TokenEvent`
naming the cause — every token its owner can no longer back: it runs after a user is saved
(deactivated, moved to another tenant) or their groups or permissions change, once the
transaction commits (so a group swap that removes before it adds decides on the final state),
and when a user is deleted.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils import formats, timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from accounts.models import IntegrationToken, TokenEvent, User

# The Django permission each token scope needs from the person it acts for (None: any user).
SCOPE_PERMISSION: dict[str, str | None] = {
    "read": None,
    "ingest": "monitoring.operate_cluster",
    "approve": "monitoring.approve_migrations",
}
# The role that carries it, for messages.
SCOPE_ROLE = {"read": "", "ingest": "operator", "approve": "approver"}


@dataclass(frozen=True)
class Refusal:
    """Why a token may not act: ``status`` 401 (the credential is dead) or 403 (it lives but
    its owner's authority does not cover this); ``cause`` a :class:`TokenEvent.Cause`."""

    status: int
    message: str
    cause: str = ""


def user_holds_scope(user, scope: str) -> bool:
    """Whether a signed-in person holds ``scope`` (the role it needs)."""
    if not getattr(user, "is_authenticated", False) or not getattr(user, "is_active", False):
        return False
    needed = SCOPE_PERMISSION[scope]
    return needed is None or user.has_perm(needed)


def token_refusal(token: IntegrationToken, *, now=None) -> Refusal | None:
    """Why ``token`` may not act at all right now (whatever the scope), or ``None``."""
    now = now or timezone.now()
    if token.revoked_at is not None:
        return Refusal(401, _("Invalid or revoked token."))
    if token.expires_at is not None and token.expires_at <= now:
        when = formats.date_format(timezone.localtime(token.expires_at), "DATETIME_FORMAT")
        return Refusal(401, _("This token expired at %(when)s; create a new one.") % {"when": when})
    owner = token.owner
    if owner is None:
        return None
    if not owner.is_active:
        return Refusal(
            401,
            _("The person this token acts for is deactivated; the token no longer works."),
            TokenEvent.Cause.OWNER_DEACTIVATED,
        )
    if owner.sees_all_tenants:
        return None
    if token.tenant_id is None:
        return Refusal(
            403,
            _(
                "This token acts on every tenant, but the person it acts for no longer sees "
                "every tenant."
            ),
            TokenEvent.Cause.OWNER_ROLE_LOST,
        )
    if owner.tenant_id != token.tenant_id:
        return Refusal(
            403,
            _("The person this token acts for no longer belongs to the token's tenant."),
            TokenEvent.Cause.OWNER_MOVED_TENANT,
        )
    return None


def token_scope_refusal(token: IntegrationToken, scope: str) -> Refusal | None:
    """Why ``token`` may not use ``scope`` (given it may act at all), or ``None``."""
    if scope not in token.scopes:
        return Refusal(403, _("This endpoint requires the '%(scope)s' scope.") % {"scope": scope})
    owner = token.owner
    if owner is None:
        if scope == "approve":
            return Refusal(403, _("This token acts for nobody, and only people approve."))
        return None
    if not user_holds_scope(owner, scope):
        return Refusal(
            403,
            _(
                "The person this token acts for no longer holds the %(role)s role the "
                "'%(scope)s' scope needs."
            )
            % {"role": SCOPE_ROLE[scope], "scope": scope},
            TokenEvent.Cause.OWNER_ROLE_LOST,
        )
    return None


def token_unbacked_refusal(token: IntegrationToken) -> Refusal | None:
    """The first reason the token's owner no longer backs it (used to revoke it for good)."""
    refusal = token_refusal(token)
    if refusal is not None and refusal.cause:
        return refusal
    for scope in token.scopes:
        refusal = token_scope_refusal(token, scope)
        if refusal is not None and refusal.cause:
            return refusal
    return None


def token_event_record(
    *,
    token: IntegrationToken,
    action: str,
    cause: str,
    actor: User | None = None,
    detail: str = "",
) -> TokenEvent:
    """Append one row to the tokens' history (the only way rows are written)."""
    return TokenEvent.objects.create(
        token_id=token.pk,
        token_label=str(token)[:200],
        owner_username=token.owner.username if token.owner_id else "",
        actor_username=actor.username if actor is not None else "",
        action=action,
        cause=cause,
        detail=detail[:2000],
    )


@transaction.atomic
def tokens_reconcile(*, user_id: int, actor: User | None = None) -> list[IntegrationToken]:
    """Revoke every active token of the user that they can no longer back, audited.

    Idempotent: a second run finds nothing left to revoke. Returns the tokens revoked.
    """
    owner = User.objects.filter(pk=user_id).first()
    if owner is None:
        return []
    revoked = []
    tokens = IntegrationToken.objects.select_for_update().filter(
        owner_id=user_id, revoked_at__isnull=True
    )
    for token in tokens:
        token.owner = owner  # one fresh owner (and permission cache) for every token
        refusal = token_unbacked_refusal(token)
        if refusal is None:
            continue
        token.revoke()
        token.save(update_fields=["revoked_at"])
        token_event_record(
            token=token,
            action=TokenEvent.Action.REVOKED,
            cause=refusal.cause,
            actor=actor,
            detail=_english(refusal.cause),
        )
        revoked.append(token)
    return revoked


@transaction.atomic
def tokens_revoke_for_deleted_owner(*, user: User) -> int:
    """Revoke a user's tokens before the user row goes (``owner`` would become empty and the
    token would silently act for nobody)."""
    count = 0
    for token in IntegrationToken.objects.select_for_update().filter(
        owner_id=user.pk, revoked_at__isnull=True
    ):
        token.revoke()
        token.save(update_fields=["revoked_at"])
        token_event_record(
            token=token,
            action=TokenEvent.Action.REVOKED,
            cause=TokenEvent.Cause.OWNER_DELETED,
            actor=getattr(user, "_authority_changed_by", None),
            detail=_english(TokenEvent.Cause.OWNER_DELETED),
        )
        count += 1
    return count


_CAUSE_TEXT = {
    TokenEvent.Cause.OWNER_DEACTIVATED: gettext_noop("its owner was deactivated"),
    TokenEvent.Cause.OWNER_ROLE_LOST: gettext_noop(
        "its owner no longer holds the role one of its scopes needs"
    ),
    TokenEvent.Cause.OWNER_MOVED_TENANT: gettext_noop("its owner left the token's tenant"),
    TokenEvent.Cause.OWNER_DELETED: gettext_noop("its owner was deleted"),
}


def _english(cause: str) -> str:
    return _CAUSE_TEXT.get(cause, cause)
