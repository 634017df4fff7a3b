"""Exporter targets the portal scrapes itself (dcgm-exporter, Ascend npu-exporter)."""

from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from cluster_portal.web.contact_status import ContactStatus
from cluster_portal.web.outbound import validate_outbound_url
from telemetry.models.vouching import VouchedEvidence


class ExporterTarget(VouchedEvidence, ContactStatus):
    """A ``/metrics`` URL scraped on an interval through the same mapping as pushed text.

    ``last_*`` fields are what operators see: when it last worked, and the last error verbatim.
    """

    class Kind(models.TextChoices):
        AUTO = "auto", _("detect from metric names")
        DCGM = "dcgm", _("NVIDIA dcgm-exporter")
        NPU = "npu", _("Ascend npu-exporter")

    name = models.SlugField(_("name"), max_length=100, unique=True)
    url = models.URLField(_("URL"), max_length=500, validators=[validate_outbound_url])
    kind = models.CharField(_("kind"), max_length=10, choices=Kind.choices, default=Kind.AUTO)
    cluster = models.ForeignKey(
        "inventory.Cluster", on_delete=models.CASCADE, related_name="exporter_targets"
    )
    node = models.CharField(
        _("node hostname"),
        max_length=200,
        blank=True,
        help_text=_("Host to file samples under when the exporter names none (npu-exporter)."),
    )
    interval_seconds = models.PositiveIntegerField(
        _("interval (s)"), default=15, validators=[MinValueValidator(5), MaxValueValidator(3600)]
    )
    timeout_seconds = models.FloatField(
        _("timeout (s)"), default=5.0, validators=[MinValueValidator(0.5), MaxValueValidator(60)]
    )
    enabled = models.BooleanField(_("enabled"), default=True)
    last_attempt_at = models.DateTimeField(_("last attempt"), null=True, blank=True)
    # Set by the claim, cleared when the scrape records its outcome: while it lies ahead, a
    # scrape of this target may still be running and no other is started.
    scrape_lease_until = models.DateTimeField(_("scrape in flight until"), null=True, blank=True)
    last_counts = models.JSONField(_("last counts"), default=dict, blank=True)
    consecutive_failures = models.PositiveIntegerField(_("consecutive failures"), default=0)

    class Meta:
        db_table = "monitoring_exportertarget"  # kept from before the app split
        ordering = ["cluster", "name"]
        verbose_name = _("exporter target")
        verbose_name_plural = _("exporter targets")

    def __str__(self) -> str:
        return self.name
