"""The append-only history of integration tokens: issued, rotated, revoked and why."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class TokenEventImmutable(Exception):
    """Raised when code tries to change or delete a token event."""


class TokenEvent(models.Model):
    """One row per change in a token's life, never updated or deleted.

    The audit of credentials lives here, in ``accounts`` (the bottom of the dependency DAG),
    because tokens are revoked from here: when their owner is deactivated, loses the role a
    scope needs, moves to another tenant or is deleted (``accounts.services.authority``), and
    when a person issues, rotates or revokes one. The rows name the token, its owner and the
    actor as text, not foreign keys, so deleting a token or a user never has to update them
    (PostgreSQL refuses UPDATE and DELETE with a trigger, migration 0013).
    """

    class Action(models.TextChoices):
        ISSUED = "issued", _("issued")
        REVOKED = "revoked", _("revoked")
        # The row itself was removed (the admin, a shell): the history says so, and who.
        DELETED = "deleted", _("deleted")

    class Cause(models.TextChoices):
        REQUESTED = "requested", _("requested by a person")
        ROTATED = "rotated", _("rotated")
        OWNER_DEACTIVATED = "owner_deactivated", _("its owner was deactivated")
        OWNER_ROLE_LOST = "owner_role_lost", _("its owner lost the role a scope needs")
        OWNER_MOVED_TENANT = "owner_moved_tenant", _("its owner left the token's tenant")
        OWNER_DELETED = "owner_deleted", _("its owner was deleted")

    at = models.DateTimeField(_("when"), auto_now_add=True, db_index=True)
    token_id = models.PositiveBigIntegerField(_("token id"), db_index=True)
    token_label = models.CharField(_("token"), max_length=200)
    owner_username = models.CharField(_("acts for"), max_length=150, blank=True)
    actor_username = models.CharField(_("who"), max_length=150, blank=True)
    action = models.CharField(_("action"), max_length=20, choices=Action.choices)
    cause = models.CharField(_("cause"), max_length=30, choices=Cause.choices)
    detail = models.TextField(_("detail"), blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        verbose_name = _("token event")
        verbose_name_plural = _("token events")

    def __str__(self) -> str:
        return f"{self.token_label}: {self.action} ({self.cause})"

    def save(self, *args, **kwargs) -> None:
        if self.pk is not None:
            raise TokenEventImmutable("token events are append-only")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise TokenEventImmutable("token events are append-only")
