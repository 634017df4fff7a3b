"""Where a stored value came from: the twin, an exporter target, a token or a signed-in push.

Every raw sample and frame carries the id of one :class:`SampleSource` (a 4-byte column, filled
once per batch — never a string per row), so a gate can measure only the evidence its criterion
trusts and show approvers how many values each source contributed. See
``telemetry/provenance.py`` and the README ("Gate evidence").
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class SampleSource(models.Model):
    """One writer of telemetry. ``key`` is stable (``twin``, ``exporter:12``, ``token:7``,
    ``user:3``); ``label`` is the name at creation, kept when the target or token is deleted so
    old evidence still says who wrote it. The foreign keys are ``SET_NULL`` for that reason."""

    class Kind(models.TextChoices):
        TWIN = "twin", _("digital twin")
        EXPORTER = "exporter", _("exporter target")
        TOKEN = "token", _("integration token")
        USER = "user", _("signed-in user")

    kind = models.CharField(_("kind"), max_length=10, choices=Kind.choices)
    key = models.CharField(_("key"), max_length=40, unique=True)
    label = models.CharField(_("label"), max_length=200)
    cluster = models.ForeignKey(
        "inventory.Cluster", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    exporter_target = models.ForeignKey(
        "telemetry.ExporterTarget",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    token = models.ForeignKey(
        "monitoring.IntegrationToken",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    # The person behind the write: a token's owner or the signed-in user.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    tenant = models.ForeignKey(
        "monitoring.Tenant", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        db_table = "monitoring_samplesource"  # every telemetry table keeps the old prefix
        verbose_name = _("sample source")
        verbose_name_plural = _("sample sources")

    def __str__(self) -> str:
        return self.label
