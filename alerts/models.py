"""Alert rules on telemetry and the alerts they raise, each with a runbook hint."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from telemetry.read import ALLOCATED_IDLE_METRIC


class Severity(models.TextChoices):
    INFO = "info", _("info")
    WARNING = "warning", _("warning")
    CRITICAL = "critical", _("critical")


class AlertRule(models.Model):
    """``aggregation(metric over window) comparator threshold`` for every entity of a kind.

    ``runbook`` is shown with each alert: what to check first, following the field's
    troubleshooting playbook (fragmentation before blaming capacity, optics before routing...).

    **Allocated but idle** (``metric`` = ``accelerator_allocated_idle_seconds``): a card an
    open scheduler allocation holds whose utilization reads under ``threshold`` (a ratio,
    0–1, comparator ``<``) for at least ``window_seconds``; its value is how long the card
    has read idle so far, in seconds (``telemetry.read.allocated_idle_values``).
    """

    class Aggregation(models.TextChoices):
        MEAN = "mean", _("mean")
        MAX = "max", _("max")
        MIN = "min", _("min")
        LAST = "last", _("last value")

    class Comparator(models.TextChoices):
        GT = "gt", ">"
        GE = "ge", "≥"
        LT = "lt", "<"
        LE = "le", "≤"

    name = models.SlugField(_("name"), max_length=100, unique=True)
    title = models.CharField(_("title"), max_length=200)
    metric = models.CharField(_("metric"), max_length=200)
    entity_kind = models.CharField(_("entity kind"), max_length=20)
    aggregation = models.CharField(
        _("aggregation"), max_length=10, choices=Aggregation.choices, default=Aggregation.MEAN
    )
    comparator = models.CharField(_("comparator"), max_length=2, choices=Comparator.choices)
    threshold = models.FloatField(_("threshold"))
    window_seconds = models.PositiveIntegerField(
        _("window (s)"), default=300, validators=[MinValueValidator(60)]
    )
    severity = models.CharField(_("severity"), max_length=10, choices=Severity.choices)
    runbook = models.TextField(_("runbook hint"))
    enabled = models.BooleanField(_("enabled"), default=True)

    class Meta:
        db_table = "monitoring_alertrule"  # kept from before the app split
        ordering = ["name"]
        verbose_name = _("alert rule")
        verbose_name_plural = _("alert rules")

    def __str__(self) -> str:
        return self.title

    @property
    def is_allocated_idle(self) -> bool:
        return self.metric == ALLOCATED_IDLE_METRIC

    def clean(self) -> None:
        super().clean()
        if not self.is_allocated_idle:
            return
        errors = {}
        if self.entity_kind != "accelerator":
            errors["entity_kind"] = _("An allocated-but-idle rule watches cards: 'accelerator'.")
        if self.comparator != self.Comparator.LT:
            errors["comparator"] = _(
                "An allocated-but-idle rule fires while utilization is under the threshold: '<'."
            )
        if self.aggregation != self.Aggregation.MAX:
            errors["aggregation"] = _(
                "An allocated-but-idle rule compares every reading (the bucket maxima): 'max'."
            )
        if self.threshold is not None and not 0 < self.threshold <= 1:
            errors["threshold"] = _(
                "The utilization threshold is a ratio above 0 and at most 1 (0.05 is 5%)."
            )
        if errors:
            raise ValidationError(errors)


class Alert(models.Model):
    """One firing (or past) condition of a rule on one entity.

    At most one open (firing or acknowledged) alert per rule and entity: re-evaluation updates
    ``last_seen`` and ``value`` instead of piling up duplicates.
    """

    class State(models.TextChoices):
        FIRING = "firing", _("firing")
        ACKNOWLEDGED = "acknowledged", _("acknowledged")
        RESOLVED = "resolved", _("resolved")

    rule = models.ForeignKey(AlertRule, on_delete=models.CASCADE, related_name="alerts")
    entity = models.ForeignKey("telemetry.Entity", on_delete=models.CASCADE, related_name="alerts")
    tenant = models.ForeignKey("monitoring.Tenant", null=True, blank=True, on_delete=models.CASCADE)
    severity = models.CharField(_("severity"), max_length=10, choices=Severity.choices)
    state = models.CharField(_("state"), max_length=12, choices=State.choices, default=State.FIRING)
    value = models.FloatField(_("value"))
    message = models.CharField(_("message"), max_length=400)
    first_seen = models.DateTimeField(_("first seen"))
    last_seen = models.DateTimeField(_("last seen"))
    acknowledged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    acknowledged_at = models.DateTimeField(_("acknowledged at"), null=True, blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    resolved_at = models.DateTimeField(_("resolved at"), null=True, blank=True)

    class Meta:
        db_table = "monitoring_alert"  # kept from before the app split
        ordering = ["-last_seen"]
        verbose_name = _("alert")
        verbose_name_plural = _("alerts")
        constraints = [
            models.UniqueConstraint(
                fields=["rule", "entity"],
                condition=~Q(state="resolved"),
                name="alert_one_open_per_rule_entity",
            )
        ]
        indexes = [models.Index(fields=["state", "severity"], name="alert_state_severity")]

    def __str__(self) -> str:
        return f"{self.rule.name} on {self.entity}"

    @property
    def message_display(self) -> str:
        """``message`` said again in the reader's language (it was written in the worker's)."""
        return alert_message(self.rule, self.entity.key, self.value)


MESSAGE_MAX = 400


def _number(value: float) -> str:
    return f"{value:.4g}"


def alert_message(rule: AlertRule, entity_key: str, value: float) -> str:
    """What the alert says, e.g. ``sn0/r1/n2/c3: max of accelerator_temperature_celsius over
    120 s is 97.2 (threshold > 95)``, in the active language: the stored message is the
    worker's (default) language, pages say it again in the reader's (``Alert.message_display``)."""
    if rule.is_allocated_idle:
        text = gettext(
            "%(entity)s: held by a scheduler job and under %(percent)s%% utilization for "
            "%(minutes)s min (rule: at least %(window)s min)"
        ) % {
            "entity": entity_key,
            "percent": _number(rule.threshold * 100),
            "minutes": round(value / 60),
            "window": round(rule.window_seconds / 60),
        }
        return text if len(text) <= MESSAGE_MAX else text[: MESSAGE_MAX - 1] + "…"
    text = gettext(
        "%(entity)s: %(aggregation)s of %(metric)s over %(window)s s is %(value)s "
        "(threshold %(comparator)s %(threshold)s)"
    ) % {
        "entity": entity_key,
        "aggregation": rule.get_aggregation_display(),
        "metric": rule.metric,
        "window": rule.window_seconds,
        "value": _number(value),
        "comparator": rule.get_comparator_display(),
        "threshold": _number(rule.threshold),
    }
    return text if len(text) <= MESSAGE_MAX else text[: MESSAGE_MAX - 1] + "…"
