"""Attribution intervals: who held which card (or MIG slice) when, from the exporters' labels
and from the workload scheduler's allocations.

dcgm-exporter and npu-exporter label a card's samples with the Kubernetes pod that holds it
(``pod``/``namespace``/``container``) or dcgm-exporter's Slurm job (``hpc_job``). Those labels
change far less often than samples arrive, so they are kept as intervals — one row per card
and holder while consecutive scrapes keep reporting the same holder — not as columns on every
sample. Workloads bind to intervals by label selector (``Workload.series_selector``) and the
cost ledger bills the card-seconds they cover. See docs/architecture.md §3.

A second kind, ``scheduler``, is written by the scheduler sync (``telemetry.ingest.
scheduler_attribution``): a running Slurm job's ``gres_detail`` cards, one row per card and job,
with the job id in ``hpc_job`` and the tenant its account maps to. Precedence (README
"Who holds which card"): for *who holds a card* the scheduler's interval wins where one is
open, exporter labels fill the cards no scheduler allocates; the cost ledger still bills the
exporter intervals only (``telemetry.read.attribution_held_by_hour``), so nothing is billed
twice.
"""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class AttributionKind(models.TextChoices):
    """Where an interval comes from."""

    EXPORTER = "exporter", _("exporter labels")
    SCHEDULER = "scheduler", _("scheduler allocation")


class AttributionInterval(models.Model):
    """One card (or slice) held by one holder from ``started_at`` to ``last_seen_at``.

    The interval stands for the time from its first observation to one scrape step after its
    last (``step_seconds``, the smallest gap seen between its observations, else the
    cluster's telemetry interval), so a holder seen at one scrape is billed one step, not
    nothing. A gap longer than ``ATTRIBUTION_MAX_GAP_SECONDS``, the card seen free or another
    holder ends it (``ended_at``).
    """

    cluster = models.ForeignKey("inventory.Cluster", on_delete=models.CASCADE, related_name="+")
    entity = models.ForeignKey(
        "telemetry.Entity", on_delete=models.CASCADE, related_name="attribution_intervals"
    )
    namespace = models.CharField(_("namespace"), max_length=200, blank=True)
    pod = models.CharField(_("pod"), max_length=200, blank=True)
    container = models.CharField(_("container"), max_length=200, blank=True)
    hpc_job = models.CharField(_("HPC job"), max_length=200, blank=True)
    host = models.CharField(_("host"), max_length=200, blank=True)
    started_at = models.DateTimeField(_("first seen"))
    last_seen_at = models.DateTimeField(_("last seen"))
    # Set when the card was next seen free or held by someone else: the interval cannot
    # reach past it, whatever its step.
    ended_at = models.DateTimeField(_("ended at"), null=True, blank=True)
    step_seconds = models.FloatField(_("scrape step (s)"), default=0.0)
    observations = models.PositiveIntegerField(_("observations"), default=1)
    source = models.ForeignKey(
        "telemetry.SampleSource", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    kind = models.CharField(
        _("from"), max_length=20, choices=AttributionKind.choices, default=AttributionKind.EXPORTER
    )
    # Scheduler intervals only: the tenant the job's account maps to (exporter labels name a
    # pod or job, which a workload selector binds to a tenant on the read side instead).
    tenant = models.ForeignKey(
        "monitoring.Tenant", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )

    class Meta:
        db_table = "monitoring_attributioninterval"  # every telemetry table keeps the old prefix
        verbose_name = _("attribution interval")
        verbose_name_plural = _("attribution intervals")
        ordering = ["entity_id", "started_at"]
        indexes = [
            models.Index(fields=["cluster", "last_seen_at"], name="attribution_cluster_seen"),
            models.Index(fields=["entity", "last_seen_at"], name="attribution_entity_seen"),
            models.Index(
                fields=["cluster", "kind"],
                condition=models.Q(ended_at__isnull=True),
                name="attribution_open_by_kind",
            ),
        ]
        constraints = [
            # One start per card and kind: a scheduler allocation and an exporter label seen
            # at the same second are two observations, not a conflict.
            models.UniqueConstraint(
                fields=["entity", "kind", "started_at"], name="attribution_unique_kind_start"
            ),
            models.CheckConstraint(
                condition=models.Q(last_seen_at__gte=models.F("started_at")),
                name="attribution_seen_after_start",
            ),
        ]

    def __str__(self) -> str:
        holder = self.hpc_job or "/".join(p for p in (self.namespace, self.pod) if p)
        return (
            f"{self.entity_id}: {holder} {self.started_at:%Y-%m-%d %H:%M}–{self.last_seen_at:%H:%M}"
        )

    def holder_labels(self) -> dict[str, str]:
        """The labels a workload's selector is matched against."""
        return {
            "namespace": self.namespace,
            "pod": self.pod,
            "container": self.container,
            "hpc_job": self.hpc_job,
            "host": self.host,
        }
