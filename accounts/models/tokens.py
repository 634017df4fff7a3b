"""Integration API tokens: scoped, optionally bound to a tenant, stored only as a hash."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

TOKEN_SCOPES = ("ingest", "read", "approve")


def validate_scopes(value: list[str]) -> None:
    if not isinstance(value, list) or not value:
        raise ValidationError(_("Give at least one scope."))
    unknown = sorted(set(value) - set(TOKEN_SCOPES))
    if unknown:
        raise ValidationError(
            _("Unknown scope(s): %(unknown)s. Valid scopes: %(valid)s."),
            params={"unknown": ", ".join(unknown), "valid": ", ".join(TOKEN_SCOPES)},
        )


def max_token_lifetime() -> timedelta | None:
    """The longest a token that expires may live (``TOKEN_MAX_LIFETIME_DAYS``; 0: no bound).
    Also what keeps a rotation's renewed expiry inside the calendar (an expiry in year 9999
    once overflowed it into a 500)."""
    days = getattr(settings, "TOKEN_MAX_LIFETIME_DAYS", 0) or 0
    return timedelta(days=days) if days > 0 else None


class IntegrationToken(models.Model):
    """A machine credential for exporters and integrations.

    The secret is shown once at creation; only its SHA-256 is stored, looked up by a short
    public prefix so verification is one indexed read plus a constant-time compare.
    """

    name = models.CharField(_("name"), max_length=100)
    tenant = models.ForeignKey(
        "monitoring.Tenant",
        verbose_name=_("tenant"),
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="tokens",
        help_text=_("Empty: an operator-level token that may act on every tenant."),
    )
    scopes = models.JSONField(_("scopes"), default=list, validators=[validate_scopes])
    prefix = models.CharField(_("prefix"), max_length=16, unique=True, editable=False)
    secret_hash = models.CharField(_("secret hash"), max_length=64, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    # The person the token acts for. A token never has authority of its own: what it may do
    # is the intersection of its scopes and its owner's permissions (``approve`` needs an
    # owner who holds the approver permission), and approvals made with it are the owner's.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("acts for"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="owned_tokens",
        help_text=_("The person this token acts for; approvals made with it are theirs."),
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    last_used_at = models.DateTimeField(_("last used at"), null=True, blank=True)
    revoked_at = models.DateTimeField(_("revoked at"), null=True, blank=True)
    # Optional end of life: past it the token answers 401 ("expired") like a revoked one.
    expires_at = models.DateTimeField(
        _("expires at"),
        null=True,
        blank=True,
        help_text=_("Empty: the token works until it is revoked."),
    )

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("integration token")
        verbose_name_plural = _("integration tokens")

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    def clean(self) -> None:
        super().clean()
        # Only a new token must expire in the future: an existing one may already be past it.
        if self._state.adding and self.expires_at is not None and self.expires_at <= timezone.now():
            raise ValidationError({"expires_at": _("The expiry must be in the future.")})
        longest = max_token_lifetime()
        if (
            self._state.adding
            and self.expires_at is not None
            and longest is not None
            and self.expires_at > timezone.now() + longest
        ):
            raise ValidationError(
                {
                    "expires_at": _(
                        "A token may live at most %(days)s days (TOKEN_MAX_LIFETIME_DAYS)."
                    )
                    % {"days": longest.days}
                }
            )

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()

    @property
    def is_active(self) -> bool:
        """Still works: neither revoked nor expired (its owner's authority is checked apart)."""
        return self.revoked_at is None and not self.is_expired

    def revoke(self) -> None:
        self.revoked_at = timezone.now()
