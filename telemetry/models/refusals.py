"""Refused pushes, counted per cluster, path and reason (issue 22 part 9)."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class IngestRefusal(models.Model):
    """How many samples (or whole requests) one ingestion path refused for one reason, and
    the last time and message. Kept in the database so every gunicorn worker adds to the same
    counter; ``/metrics`` and ``/exporters/`` read it. ``cluster_name`` is empty for pushes
    naming no known cluster (the name they gave is in ``last_message``): a misspelled name must
    not grow the table or ``/metrics``' label values.

    ``reason`` is one of ``telemetry.families.identity.Refusal``; ``unit`` says whether
    ``count`` counts samples (a series refused, the rest stored) or requests (refused whole).
    """

    class Path(models.TextChoices):
        REMOTE_WRITE = "remote_write", _("remote-write")
        PROMETHEUS = "prometheus", _("exporter text push")
        SCRAPE = "scrape", _("scrape")
        JSON = "json", _("JSON batch")

    class Unit(models.TextChoices):
        SAMPLES = "samples", _("samples")
        REQUESTS = "requests", _("requests")

    cluster_name = models.CharField(_("cluster"), max_length=60, blank=True)
    path = models.CharField(_("path"), max_length=20, choices=Path.choices)
    reason = models.CharField(_("reason"), max_length=40)
    unit = models.CharField(_("unit"), max_length=10, choices=Unit.choices)
    count = models.PositiveBigIntegerField(_("count"), default=0)
    last_at = models.DateTimeField(_("last refused at"))
    last_message = models.CharField(_("last message"), max_length=500, blank=True)

    class Meta:
        ordering = ["cluster_name", "path", "reason", "unit"]
        verbose_name = _("ingest refusal")
        verbose_name_plural = _("ingest refusals")
        constraints = [
            models.UniqueConstraint(
                fields=["cluster_name", "path", "reason", "unit"], name="ingest_refusal_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.cluster_name or '?'} {self.path} {self.reason}: {self.count}"
