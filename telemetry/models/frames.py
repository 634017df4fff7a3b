"""Dense telemetry frames: one row holds a metric for every entity of a kind in a cluster.

A 10,240-card cluster reports ~90,000 per-card values a minute. As one row each that is far
too many rows to write in a second or to keep for a month; as one array per metric per
timestamp it is a handful of rows, and fleet views (heatmaps, per-rack means, top-N) are one
read plus NumPy. Sparse sources (exporters, JSON pushes) keep using :class:`Sample`; selectors
read both, so dashboards and gates do not care which path wrote a value.
"""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class FrameLayout(models.Model):
    """The entity order of frames: ``entity_ids`` is an int64 array, position i ↔ entity i."""

    cluster = models.ForeignKey(
        "inventory.Cluster", on_delete=models.CASCADE, related_name="frame_layouts"
    )
    kind = models.CharField(_("entity kind"), max_length=20)
    keys_digest = models.CharField(_("digest of the entity keys"), max_length=64)
    size = models.PositiveIntegerField(_("entities"))
    entity_ids = models.BinaryField(_("entity ids (int64)"))
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    # Minute rollups before this time are folded into the 15-minute, hour and day tiers; later
    # minutes are folded by compaction once they close (``store.frames``). Null: nothing
    # written since the tiers were deferred (the first write sets it).
    coarse_until = models.DateTimeField(_("coarse rollups complete until"), null=True, blank=True)

    class Meta:
        db_table = "monitoring_framelayout"  # kept from before the app split
        verbose_name = _("frame layout")
        verbose_name_plural = _("frame layouts")
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "kind", "keys_digest"], name="framelayout_unique_digest"
            )
        ]

    def __str__(self) -> str:
        return f"{self.cluster_id}/{self.kind} ({self.size})"


class Frame(models.Model):
    """One metric for all entities of a layout at one time (``resolution`` 0) or bucket.

    Raw frames hold ``values`` (float32, NaN = no value). Rollup frames (60/900/3600/86400 s)
    hold per-entity ``count`` (int32), ``sum`` (float64), ``min`` and ``max`` (float32), so
    buckets merge exactly: minutes as frames arrive, coarser tiers from each closed minute.
    """

    metric = models.ForeignKey("telemetry.MetricDefinition", on_delete=models.CASCADE)
    layout = models.ForeignKey(FrameLayout, on_delete=models.CASCADE, related_name="frames")
    resolution = models.PositiveIntegerField(_("resolution (s, 0 = raw)"))
    ts = models.DateTimeField(_("time or bucket start"))
    values = models.BinaryField(_("values"), null=True)
    count = models.BinaryField(_("count"), null=True)
    sum = models.BinaryField(_("sum"), null=True)
    min = models.BinaryField(_("min"), null=True)
    max = models.BinaryField(_("max"), null=True)
    # The fleet-wide reduction kind-wide curves plot, kept beside the arrays so a 24-hour
    # curve over 3,000 links reads 1,440 pairs of numbers instead of 60 MB of arrays: the sum
    # over entities of the value (raw) or of each entity's bucket mean (rollups), and how many
    # entities had one. Null on frames written before these existed (read from the arrays).
    entities_sum = models.FloatField(_("sum over entities"), null=True)
    entities_count = models.PositiveIntegerField(_("entities with a value"), null=True)
    # Who wrote the raw frame (the twin, in practice); rollup frames merge raw frames and
    # carry none. Unconstrained like ``Sample.source``.
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
        db_table = "monitoring_frame"  # kept from before the app split
        verbose_name = _("frame")
        verbose_name_plural = _("frames")
        constraints = [
            models.UniqueConstraint(
                fields=["metric", "layout", "resolution", "ts"], name="frame_unique_point"
            )
        ]

    def __str__(self) -> str:
        return f"{self.metric_id}@{self.layout_id} r{self.resolution} {self.ts:%Y-%m-%d %H:%M:%S}"
