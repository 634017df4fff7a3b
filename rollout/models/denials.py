"""Refused commands from principals who cannot act on a plan at all, counted per hour."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class DeniedAttemptCount(models.Model):
    """How often one principal who holds no workflow role at all (a customer, a read token)
    was refused one command on one plan within one hour.

    The first refusal of each hour is an audit row like any other (``<action>_denied``); the
    rest only raise ``count`` here, so nobody can push a plan's real history off its page by
    flooding it with refusals (300 ``approve_denied`` rows in 6 s before). Refusals of people
    who hold a workflow role (an approver approving their own request) are audited each time.
    """

    plan = models.ForeignKey(
        "rollout.MigrationPlan",
        verbose_name=_("plan"),
        on_delete=models.CASCADE,
        related_name="denied_attempt_counts",
    )
    action = models.CharField(_("action"), max_length=40)
    principal = models.CharField(_("who"), max_length=200)
    hour = models.DateTimeField(_("hour"))
    count = models.PositiveIntegerField(_("refused attempts"), default=0)
    last_at = models.DateTimeField(_("last attempt"))

    class Meta:
        ordering = ["-hour", "plan_id", "action"]
        verbose_name = _("refused attempts (counted)")
        verbose_name_plural = _("refused attempts (counted)")
        constraints = [
            models.UniqueConstraint(
                fields=["plan", "action", "principal", "hour"], name="denied_count_once_per_hour"
            )
        ]

    def __str__(self) -> str:
        return f"{self.principal} {self.action} ×{self.count} ({self.hour:%Y-%m-%d %H:00})"
