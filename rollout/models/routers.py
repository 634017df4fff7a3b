"""Traffic routers: what moves a plan's traffic for real, and the log of every call to one.

The contract each kind speaks is documented in ``docs/traffic-routers.md``; the clients are in
:mod:`rollout.routers`, the service that calls them in :mod:`rollout.services.traffic`.
"""

from __future__ import annotations

import re

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from cluster_portal.web.outbound import stream_address_refused, validate_outbound_url

# HAProxy's own rule for proxy and server names (letters, digits, "-", "_", ".", ":").
HAPROXY_NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
# A webhook router's secret is never stored: the row names an environment variable that holds
# it, and only variables with this prefix, so a router cannot be pointed at the portal's own
# SECRET_KEY or database password.
SECRET_REF_PREFIX = "PORTAL_ROUTER_SECRET_"
SECRET_REF = re.compile(r"^PORTAL_ROUTER_SECRET_[A-Z0-9_]{1,60}$")


class RouterKind(models.TextChoices):
    TWIN = "twin", _("digital twin")
    HAPROXY = "haproxy", _("HAProxy Runtime API")
    WEBHOOK = "webhook", _("webhook (deploy tool)")


def validate_haproxy_address(value: str) -> None:
    """``unix:/path/to/admin.sock`` or ``host:port`` (the stats socket, ``level admin``).

    A unix socket must lie in one of ``ROUTER_SOCKET_DIRS`` and a literal TCP host must pass
    the outbound policy, as webhook URLs do: a router must not become a probe of the portal's
    own database or broker sockets."""
    if value.startswith("unix:"):
        if not value[5:].startswith("/"):
            raise ValidationError(_("A unix socket address is unix:/absolute/path."))
        if stream_address_refused(value):
            raise ValidationError(
                _("Only sockets inside ROUTER_SOCKET_DIRS (%(dirs)s) may be named.")
                % {"dirs": ", ".join(settings.ROUTER_SOCKET_DIRS) or _("none configured")},
                code="refused",
            )
        return
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValidationError(_("Give unix:/path/to/socket or host:port."))
    if stream_address_refused(value):
        raise ValidationError(
            _("Address refused by the outbound policy (OUTBOUND_ALLOWED_NETWORKS)."),
            code="refused",
        )


class TrafficRouter(models.Model):
    """A router the portal moves traffic with: the twin, an HAProxy backend, or a deploy tool.

    HAProxy: the Runtime API on ``haproxy_address``; the plan's share is the weight of
    ``haproxy_target_server`` over both servers of ``haproxy_backend`` (source server gets the
    rest). Webhook: a signed desired-state POST to ``webhook_url``, signed with the secret in
    the environment variable ``webhook_secret_ref`` (never in the database, never shown).
    """

    name = models.CharField(_("name"), max_length=100, unique=True)
    kind = models.CharField(_("kind"), max_length=10, choices=RouterKind.choices)
    haproxy_address = models.CharField(
        _("HAProxy stats socket"),
        max_length=300,
        blank=True,
        validators=[validate_haproxy_address],
        help_text=_("unix:/run/haproxy/admin.sock or host:port (level admin)."),
    )
    haproxy_backend = models.CharField(_("HAProxy backend"), max_length=64, blank=True)
    haproxy_source_server = models.CharField(_("source server"), max_length=64, blank=True)
    haproxy_target_server = models.CharField(_("target server"), max_length=64, blank=True)
    webhook_url = models.URLField(
        _("webhook URL"), max_length=500, blank=True, validators=[validate_outbound_url]
    )
    webhook_secret_ref = models.CharField(
        _("signing secret (environment variable)"),
        max_length=100,
        blank=True,
        help_text=_("Name of the environment variable holding the secret: PORTAL_ROUTER_SECRET_…"),
    )
    timeout_seconds = models.FloatField(
        _("deadline per call (s)"),
        default=5.0,
        validators=[MinValueValidator(0.2), MaxValueValidator(30.0)],
    )
    max_attempts = models.PositiveSmallIntegerField(
        _("attempts per call"), default=3, validators=[MinValueValidator(1), MaxValueValidator(5)]
    )
    confirm_within_seconds = models.PositiveIntegerField(
        _("callback confirmation within (s)"),
        default=300,
        validators=[MinValueValidator(5), MaxValueValidator(3600)],
    )
    # Weights are not a split: with a tolerance, a step's analysis clock starts only once the
    # router's own per-server counters show the target served its share over a window of
    # ``split_window_seconds`` holding at least ``split_min_requests`` requests, and a served
    # split outside it during the step makes the step's measurements Inconclusive. Empty: the
    # weights' read-back alone confirms (a router that reports no counters).
    split_tolerance_points = models.FloatField(
        _("served split tolerance (points)"),
        null=True,
        blank=True,
        default=5.0,
        validators=[MinValueValidator(0.5), MaxValueValidator(50.0)],
        help_text=_(
            "How far the share the target actually served may be from the share asked, in "
            "percentage points. Empty: confirm by the weights alone."
        ),
    )
    split_window_seconds = models.PositiveIntegerField(
        _("served split window (s)"),
        default=30,
        validators=[MinValueValidator(5), MaxValueValidator(600)],
    )
    split_min_requests = models.PositiveIntegerField(
        _("requests needed to judge the split"),
        default=20,
        validators=[MinValueValidator(1), MaxValueValidator(1_000_000)],
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name = _("traffic router")
        verbose_name_plural = _("traffic routers")

    def __str__(self) -> str:
        return f"{self.name} ({self.get_kind_display()})"

    def clean(self) -> None:
        errors: dict[str, object] = {}
        if self.kind == RouterKind.HAPROXY:
            if not self.haproxy_address:
                errors["haproxy_address"] = _("An HAProxy router needs its stats socket.")
            for field in ("haproxy_backend", "haproxy_source_server", "haproxy_target_server"):
                value = getattr(self, field)
                if not HAPROXY_NAME.match(value or ""):
                    errors[field] = _("Give an HAProxy name (letters, digits, - _ . :).")
            if (
                self.haproxy_source_server
                and self.haproxy_source_server == self.haproxy_target_server
            ):
                errors["haproxy_target_server"] = _("Source and target must be two servers.")
        if self.kind == RouterKind.WEBHOOK:
            if not self.webhook_url:
                errors["webhook_url"] = _("A webhook router needs its URL.")
            if not SECRET_REF.match(self.webhook_secret_ref or ""):
                errors["webhook_secret_ref"] = _(
                    "Name an environment variable PORTAL_ROUTER_SECRET_… (capitals, digits, _)."
                )
        if errors:
            raise ValidationError(errors)


class RouterOutcome(models.TextChoices):
    """What a router call came to; every failure is its own reason code."""

    CONFIRMED = "confirmed", _("confirmed")
    # Committed by the transition, sent to the router after it (outside its transaction).
    INTENDED = "intended", _("to be sent to the router")
    PENDING = "pending", _("awaiting the router's callback")
    REFUSED = "refused", _("refused by the router")
    TIMEOUT = "timeout", _("no answer in time")
    UNREACHABLE = "unreachable", _("router unreachable")
    MISMATCH = "mismatch", _("router confirmed another share")
    GARBAGE = "garbage", _("router answered garbage")
    UNKNOWN_NAME = "unknown_name", _("unknown backend or server")
    # A later call of the same workload replaced this one before its answer: the answer is
    # recorded and changes nothing (an old callback must not undo an abort).
    SUPERSEDED = "superseded", _("superseded by a later call")


ROUTER_FAILURES = tuple(
    o
    for o in RouterOutcome.values
    if o
    not in (
        RouterOutcome.CONFIRMED,
        RouterOutcome.PENDING,
        RouterOutcome.INTENDED,
        RouterOutcome.SUPERSEDED,
    )
)


class RouterCall(models.Model):
    """One call to a router for one workload of a plan: the share asked, the share the router
    confirmed on read-back, and what it answered.

    The transition commits it as an intent (``intended``); a dispatcher claims it
    (``claimed_until``, ``attempts``), calls the router outside any transaction and commits
    the outcome (audited). A claim that lapses (a worker died mid-call) is sent again — the
    share is absolute and the idempotency key the same, so a repeat changes nothing — and
    after ``MAX_DISPATCHES`` attempts the call is reported as timed out."""

    class Operation(models.TextChoices):
        SET = "set", _("set share")
        RESTORE = "restore", _("restore (rollback)")

    plan = models.ForeignKey(
        "rollout.MigrationPlan", on_delete=models.CASCADE, related_name="router_calls"
    )
    plan_workload = models.ForeignKey(
        "rollout.PlanWorkload", on_delete=models.CASCADE, related_name="router_calls"
    )
    router = models.ForeignKey(
        TrafficRouter, null=True, on_delete=models.SET_NULL, related_name="calls"
    )
    router_label = models.CharField(_("router"), max_length=130)
    operation = models.CharField(_("operation"), max_length=10, choices=Operation.choices)
    step = models.CharField(_("step"), max_length=20)
    desired_share = models.FloatField(_("share asked (%)"))
    confirmed_share = models.FloatField(_("share confirmed (%)"), null=True, blank=True)
    outcome = models.CharField(_("outcome"), max_length=20, choices=RouterOutcome.choices)
    answer = models.CharField(_("router's answer"), max_length=500, blank=True)
    idempotency_key = models.CharField(_("idempotency key"), max_length=80, unique=True)
    actor_label = models.CharField(_("who"), max_length=200)
    at = models.DateTimeField(_("when"), auto_now_add=True)
    confirmed_at = models.DateTimeField(_("confirmed at"), null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(_("dispatches"), default=0)
    claimed_until = models.DateTimeField(_("claimed until"), null=True, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        verbose_name = _("router call")
        verbose_name_plural = _("router calls")

    def __str__(self) -> str:
        return f"{self.router_label} {self.operation} {self.desired_share:g}%: {self.outcome}"
