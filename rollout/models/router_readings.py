"""What a router was seen doing: the weights it applies and the split it actually served.

A weight read back is what the router was *told*; the split is what it *did*. Each reading
keeps the router's cumulative per-server counters (HAProxy ``show stat``: sessions, 5xx,
connection and response errors, retries), so the split and the router's own error ratio over
any window are differences of two readings (``rollout.services.router_watch``).
"""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class ReadingVerdict(models.TextChoices):
    """What one reading of a router came to."""

    # The first reading after a share was set: the start of the split's window.
    BASELINE = "baseline", _("counters at the share change")
    TOO_FEW = "too_few", _("too few requests to judge the split")
    SETTLING = "settling", _("served split not yet within tolerance")
    WITHIN = "within", _("served split within tolerance")
    OUT_OF_TOLERANCE = "out_of_tolerance", _("served split left the tolerance")
    DRIFT = "drift", _("router no longer applies the share")
    NOT_SERVED = "not_served", _("served split never reached the share")


class RouterReading(models.Model):
    """One reading of one workload's router during a step: the share asked, the weights'
    read-back, and (where the router has counters) the split served since the window's start
    and the router's own errors for the target in that window."""

    plan = models.ForeignKey(
        "rollout.MigrationPlan", on_delete=models.CASCADE, related_name="router_readings"
    )
    plan_workload = models.ForeignKey(
        "rollout.PlanWorkload", on_delete=models.CASCADE, related_name="router_readings"
    )
    call = models.ForeignKey(
        "rollout.RouterCall", null=True, on_delete=models.SET_NULL, related_name="readings"
    )
    at = models.DateTimeField(_("read at"), db_index=True)
    asked_share = models.FloatField(_("share asked (%)"))
    weights_share = models.FloatField(_("share of the weights (%)"), null=True, blank=True)
    counters = models.JSONField(_("cumulative per-server counters"), default=dict, blank=True)
    window_start = models.DateTimeField(_("split window from"), null=True, blank=True)
    window_requests = models.PositiveIntegerField(_("requests in the window"), default=0)
    served_share = models.FloatField(_("served split on target (%)"), null=True, blank=True)
    target_requests = models.PositiveIntegerField(_("target requests in the window"), default=0)
    target_errors = models.PositiveIntegerField(_("router errors on target in window"), default=0)
    verdict = models.CharField(_("verdict"), max_length=20, choices=ReadingVerdict.choices)
    detail = models.CharField(_("detail"), max_length=500, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["plan_workload", "at"])]
        verbose_name = _("router reading")
        verbose_name_plural = _("router readings")

    def __str__(self) -> str:
        served = "—" if self.served_share is None else f"{self.served_share:.1f}"
        return f"{self.at:%H:%M:%S} asked {self.asked_share:g}% served {served}%: {self.verdict}"
