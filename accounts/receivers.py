"""Signal receivers that revoke tokens whose owner lost the authority behind them.

Connected in :meth:`accounts.apps.AccountsConfig.ready`. A change of a user (``is_active``,
``tenant``), the removal of one of their groups or direct permissions, or the removal of a
permission from a group schedules :func:`accounts.services.authority.tokens_reconcile` for the
people concerned once the transaction commits — decided on the final state, so the admin's group
swap (remove, then add) never revokes what the end state still backs. Whoever changed the user
is recorded when the admin says so (``user._authority_changed_by``). Additions never take
authority away, so they are ignored. The per-request check in ``accounts.services.authority``
holds on its own; these receivers make the loss permanent and visible in the tokens' history.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import Group, Permission
from django.db import transaction

from accounts.models import IntegrationToken, TokenEvent, User
from accounts.services.authority import (
    token_event_record,
    tokens_reconcile,
    tokens_revoke_for_deleted_owner,
)

_REMOVALS = ("post_remove", "post_clear")


def _schedule(user_ids: Iterable[int], actor: User | None = None) -> None:
    for user_id in {i for i in user_ids if i is not None}:
        # robust: a failure here is logged, never turned into an error of the committed change
        # (the per-request check still refuses what the owner no longer backs).
        transaction.on_commit(
            lambda u=user_id: tokens_reconcile(user_id=u, actor=actor), robust=True
        )


def _actor(instance) -> User | None:
    return getattr(instance, "_authority_changed_by", None)


def user_saved(sender, instance: User, created: bool, update_fields=None, **kwargs) -> None:
    # A login's ``last_login`` write changes no authority: skip it.
    if created or (update_fields is not None and set(update_fields) <= {"last_login"}):
        return
    _schedule([instance.pk], _actor(instance))


def token_deleting(sender, instance: IntegrationToken, **kwargs) -> None:
    # In the deleting transaction: the event and the deletion commit (or roll back) together.
    token_event_record(
        token=instance,
        action=TokenEvent.Action.DELETED,
        cause=TokenEvent.Cause.REQUESTED,
        actor=getattr(instance, "_deleted_by", None),
        detail="" if instance.revoked_at else "deleted while still active",
    )


def user_deleting(sender, instance: User, **kwargs) -> None:
    tokens_revoke_for_deleted_owner(user=instance)


def _note_before_clear(instance, users) -> None:
    # After a clear, ``pk_set`` is empty: remember who was concerned while they still are.
    instance._authority_clear_users = list(users.values_list("pk", flat=True).distinct())


def user_access_changed(sender, instance, action: str, pk_set, **kwargs) -> None:
    """``m2m_changed`` of ``User.groups`` and ``User.user_permissions``, from either side."""
    if isinstance(instance, User):
        if action in _REMOVALS:
            _schedule([instance.pk], _actor(instance))
        return
    # The other side: a Group (``group.user_set``) or a Permission (``permission.user_set``).
    if action == "pre_clear":
        _note_before_clear(instance, instance.user_set.all())
    elif action == "post_clear":
        _schedule(getattr(instance, "_authority_clear_users", []))
    elif action == "post_remove":
        _schedule(pk_set or [])


def group_permissions_changed(sender, instance, action: str, pk_set, **kwargs) -> None:
    """``m2m_changed`` of ``Group.permissions``: a removal concerns every member."""
    if isinstance(instance, Group):
        groups = [instance.pk]
    elif isinstance(instance, Permission):
        if action == "pre_clear":
            _note_before_clear(instance, User.objects.filter(groups__permissions=instance))
        groups = list(pk_set or [])
    else:
        return
    if action == "post_clear" and not isinstance(instance, Group):
        _schedule(getattr(instance, "_authority_clear_users", []))
    elif action in _REMOVALS:
        _schedule(User.objects.filter(groups__in=groups).values_list("pk", flat=True).distinct())
