"""The telemetry store: metric catalogue, entities, raw samples and rollups.

A sample is ``(metric, entity, timestamp, value)``. Raw samples are kept for a short window
(per-accelerator data is the bulk); rollups at 1 min, 1 h and 1 day keep long ranges cheap.
Rollups store count/sum/min/max so buckets merge exactly as batches arrive (mean = sum/count).
"""

from __future__ import annotations

from django.db import models
from django.db.models import F, Value
from django.db.models.functions import Coalesce
from django.utils.translation import gettext_lazy as _


class EntityKind(models.TextChoices):
    ACCELERATOR = "accelerator", _("accelerator")
    NODE = "node", _("node")
    RACK = "rack", _("rack")
    SUPERNODE = "supernode", _("supernode")
    LINK = "link", _("link")
    MEMORY_POOL = "memory_pool", _("memory pool")
    WORKLOAD = "workload", _("workload")
    CLUSTER = "cluster", _("cluster")
    EXPORTER = "exporter", _("exporter target")
    # A serving engine's endpoint (vLLM, SGLang, MindIE): cluster + model + instance or pod.
    SERVING_ENDPOINT = "serving_endpoint", _("serving endpoint")


class MetricDefinition(models.Model):
    """One entry of the metric catalogue (Prometheus naming: ``<what>_<unit>``).

    ``mapped`` is False for exporter-only metrics kept under their own name because no
    catalogue metric corresponds; they are stored, not dropped.
    """

    class Type(models.TextChoices):
        GAUGE = "gauge", _("gauge")
        COUNTER = "counter", _("counter")

    name = models.CharField(_("name"), max_length=200, unique=True)
    unit = models.CharField(_("unit"), max_length=40, blank=True)
    entity_kind = models.CharField(_("entity kind"), max_length=20, choices=EntityKind.choices)
    type = models.CharField(_("type"), max_length=10, choices=Type.choices, default=Type.GAUGE)
    description = models.CharField(_("description"), max_length=400, blank=True)
    mapped = models.BooleanField(_("in the catalogue"), default=True)

    class Meta:
        db_table = "monitoring_metricdefinition"  # kept from before the app split
        ordering = ["name"]
        verbose_name = _("metric")
        verbose_name_plural = _("metrics")

    def __str__(self) -> str:
        return self.name


class Entity(models.Model):
    """Anything a sample is about, with the topology path used to aggregate it.

    ``key`` is stable and human-readable (``sn0/r3/n12/c5``, a workload name, ...) and unique
    per cluster; the optional foreign keys let selectors group by rack, supernode or tenant
    without walking the inventory.
    """

    cluster = models.ForeignKey(
        "inventory.Cluster", on_delete=models.CASCADE, related_name="entities"
    )
    kind = models.CharField(_("kind"), max_length=20, choices=EntityKind.choices)
    key = models.CharField(_("key"), max_length=300)
    supernode = models.ForeignKey(
        "inventory.Supernode", null=True, blank=True, on_delete=models.CASCADE
    )
    rack = models.ForeignKey("inventory.Rack", null=True, blank=True, on_delete=models.CASCADE)
    node = models.ForeignKey("inventory.Node", null=True, blank=True, on_delete=models.CASCADE)
    accelerator = models.OneToOneField(
        "inventory.Accelerator", null=True, blank=True, on_delete=models.CASCADE
    )
    workload = models.OneToOneField(
        "inventory.Workload", null=True, blank=True, on_delete=models.CASCADE
    )
    link = models.OneToOneField("inventory.Link", null=True, blank=True, on_delete=models.CASCADE)
    tenant = models.ForeignKey(
        "monitoring.Tenant",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        help_text=_("Set for tenant-owned entities (workloads): customers see only these."),
    )

    class Meta:
        db_table = "monitoring_entity"  # kept from before the app split
        verbose_name = _("entity")
        verbose_name_plural = _("entities")
        constraints = [
            models.UniqueConstraint(fields=["cluster", "kind", "key"], name="entity_unique_key")
        ]
        indexes = [models.Index(fields=["cluster", "kind"], name="entity_cluster_kind")]

    def __str__(self) -> str:
        return f"{self.kind}:{self.key}"


class Sample(models.Model):
    """A raw measurement. Unique per (metric, entity, time, source) so a replay cannot duplicate
    it and one writer cannot take another's slot."""

    # No database foreign keys on the hottest insert (a check and a key-share lock per row
    # more than doubled its cost: BENCHMARKS.md, issue 22 §6); Django's cascade still deletes a
    # metric's or entity's samples, and ``telemetry.store.samples`` checks memoised ids. No
    # index of its own on ``metric``: the unique (metric, entity, ts) index leads with it.
    metric = models.ForeignKey(
        MetricDefinition, on_delete=models.CASCADE, db_index=False, db_constraint=False
    )
    entity = models.ForeignKey(Entity, on_delete=models.CASCADE, db_constraint=False)
    ts = models.DateTimeField(_("time"))
    value = models.FloatField(_("value"))
    # Who wrote it (null: written before provenance existed — trusted by no gate). No database
    # constraint: a foreign-key check per inserted row would tax the hottest write path, and
    # sources are never deleted (their rows outlive the targets and tokens they name).
    source = models.ForeignKey(
        "telemetry.SampleSource",
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        related_name="+",
    )

    class Meta:
        db_table = "monitoring_sample"  # kept from before the app split
        verbose_name = _("sample")
        verbose_name_plural = _("samples")
        constraints = [
            # One value per (series, time, source): every writer has its own slot, so an
            # untrusted writer that arrives first never takes a trusted one's (issue 31 §4).
            # ``COALESCE`` makes rows of unknown origin one writer too (a replay stays one row).
            models.UniqueConstraint(
                F("metric"),
                F("entity"),
                F("ts"),
                Coalesce(F("source"), Value(0)),
                name="sample_unique_point_source",
            )
        ]

    def __str__(self) -> str:
        return f"{self.metric_id}@{self.entity_id} {self.ts:%Y-%m-%d %H:%M:%S} = {self.value}"
        # On PostgreSQL a BRIN index on ts (migration 0003) serves retention deletes cheaply;
        # reads go through the unique (metric, entity, ts, source) index.


class Rollup(models.Model):
    """Aggregate of raw samples over a fixed bucket (``resolution`` seconds)."""

    class Resolution(models.IntegerChoices):
        MINUTE = 60, _("1 minute")
        QUARTER_HOUR = 900, _("15 minutes")
        HOUR = 3600, _("1 hour")
        DAY = 86400, _("1 day")

    metric = models.ForeignKey(MetricDefinition, on_delete=models.CASCADE)
    entity = models.ForeignKey(Entity, on_delete=models.CASCADE)
    resolution = models.PositiveIntegerField(_("resolution (s)"), choices=Resolution.choices)
    bucket = models.DateTimeField(_("bucket start"))
    count = models.PositiveIntegerField(_("count"))
    sum = models.FloatField(_("sum"))
    min = models.FloatField(_("min"))
    max = models.FloatField(_("max"))

    class Meta:
        db_table = "monitoring_rollup"  # kept from before the app split
        verbose_name = _("rollup")
        verbose_name_plural = _("rollups")
        constraints = [
            models.UniqueConstraint(
                fields=["metric", "entity", "resolution", "bucket"], name="rollup_unique_bucket"
            )
        ]

    def __str__(self) -> str:
        return f"{self.metric_id}@{self.entity_id} {self.resolution}s {self.bucket:%Y-%m-%d %H:%M}"

    @property
    def mean(self) -> float:
        return self.sum / self.count if self.count else float("nan")


class IngestionBatch(models.Model):
    """A committed ingestion request, remembered for ``Idempotency-Key`` replays."""

    key = models.CharField(_("idempotency key"), max_length=200)
    principal = models.CharField(_("sent by"), max_length=200)
    payload_sha256 = models.CharField(_("payload SHA-256"), max_length=64)
    response = models.JSONField(_("first response"))
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        db_table = "monitoring_ingestionbatch"  # kept from before the app split
        verbose_name = _("ingestion batch")
        verbose_name_plural = _("ingestion batches")
        constraints = [
            models.UniqueConstraint(fields=["principal", "key"], name="ingestion_unique_key")
        ]

    def __str__(self) -> str:
        return f"{self.principal} {self.key}"


class RollupWatermark(models.Model):
    """Rollups of ``resolution`` are complete for every bucket before ``complete_until``.

    Minute rollups are compacted from raw samples, hour rollups from minute rollups and day
    rollups from hour rollups, each up to its watermark, by a periodic task. Ingestion stays a
    plain insert; a sample older than a watermark (late data) is folded in directly.
    """

    resolution = models.PositiveIntegerField(_("resolution (s)"), unique=True)
    complete_until = models.DateTimeField(_("complete until"))

    class Meta:
        db_table = "monitoring_rollupwatermark"  # kept from before the app split
        verbose_name = _("rollup watermark")
        verbose_name_plural = _("rollup watermarks")

    def __str__(self) -> str:
        return f"{self.resolution}s until {self.complete_until:%Y-%m-%d %H:%M}"
