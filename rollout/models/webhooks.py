"""Webhook subscriptions and the log of every delivery attempt."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext_lazy as _

from cluster_portal.web.outbound import validate_outbound_url

WEBHOOK_EVENTS = (
    ("transition", _("any state transition")),
    ("awaiting_approval", _("a gate awaits approval")),
    ("analysis_failed", _("an analysis failed or errored")),
    ("aborted", _("a plan was aborted or rolled back")),
    ("completed", _("a plan completed")),
    ("router_failed", _("a traffic router refused or did not confirm a share")),
    ("rollback_unconfirmed", _("a rollback was not confirmed by the router (alert)")),
)
EVENT_NAMES = tuple(name for name, _label in WEBHOOK_EVENTS)


class WebhookSubscription(models.Model):
    """An HTTP endpoint told about workflow events, signed with HMAC-SHA256 of ``secret``.

    Deliveries are signed the Standard Webhooks way and, for one more release, with the
    deprecated ``X-Portal-Signature`` (``rollout.services.webhook_signing``). A secret written
    ``whsec_<base64>`` is the base64-decoded key; any other is its UTF-8 bytes. A subscription
    with a tenant hears only about that tenant's plans.
    """

    name = models.CharField(_("name"), max_length=100, unique=True)
    url = models.URLField(_("URL"), max_length=500, validators=[validate_outbound_url])
    events = models.JSONField(_("events"), default=list)
    # Write-only: signs every delivery, and is never shown back (the admin's form takes a new
    # one and keeps the old when left empty; no list, page or API prints it).
    secret = models.CharField(_("signing secret"), max_length=200)
    tenant = models.ForeignKey(
        "monitoring.Tenant", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    active = models.BooleanField(_("active"), default=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name = _("webhook subscription")
        verbose_name_plural = _("webhook subscriptions")

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        from rollout.services.webhook_signing import webhook_secret_problem

        problem = webhook_secret_problem(self.secret or "")
        if problem:
            raise ValidationError(
                {
                    "secret": _(
                        "A whsec_ signing secret must be followed by its key in base64 "
                        "(e.g. 32 random bytes)."
                    )
                }
            )
        if not isinstance(self.events, list) or not self.events:
            raise ValidationError({"events": _("Subscribe to at least one event.")})
        unknown = [e for e in self.events if e not in EVENT_NAMES]
        if unknown:
            raise ValidationError(
                {"events": _("Unknown events: %(names)s") % {"names": ", ".join(map(str, unknown))}}
            )


class WebhookDelivery(models.Model):
    """One event for one subscription, with its attempts so far and the last answer."""

    class Status(models.TextChoices):
        PENDING = "pending", _("pending")
        RETRYING = "retrying", _("retrying")
        DELIVERED = "delivered", _("delivered")
        FAILED = "failed", _("failed")
        CANCELLED = "cancelled", _("cancelled")

    subscription = models.ForeignKey(
        WebhookSubscription, on_delete=models.CASCADE, related_name="deliveries"
    )
    event = models.CharField(_("event"), max_length=40)
    payload = models.JSONField(_("payload"))
    status = models.CharField(
        _("status"), max_length=10, choices=Status.choices, default=Status.PENDING
    )
    # Counted before each request is sent, so an attempt whose worker was killed still counts.
    attempts = models.PositiveSmallIntegerField(_("attempts"), default=0)
    last_attempt_at = models.DateTimeField(_("last attempt"), null=True, blank=True)
    # While it lies ahead an attempt may be in flight and no other starts (see
    # ``rollout.services.webhooks.webhook_attempt_claim``).
    attempt_lease_until = models.DateTimeField(_("attempt in flight until"), null=True, blank=True)
    next_attempt_at = models.DateTimeField(_("next attempt"), null=True, blank=True)
    last_status_code = models.PositiveSmallIntegerField(_("last HTTP status"), null=True)
    last_error = models.CharField(_("last error"), max_length=500, blank=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    delivered_at = models.DateTimeField(_("delivered at"), null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = _("webhook delivery")
        verbose_name_plural = _("webhook deliveries")

    def __str__(self) -> str:
        return f"{self.subscription} {self.event} {self.status}"

    @property
    def event_display(self) -> str:
        """The event's description in the reader's language (``event`` stays the wire name)."""
        return str(dict(WEBHOOK_EVENTS).get(self.event, self.event))
