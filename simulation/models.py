"""Twin runs and their ticks: the Django side of the digital twin."""

from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils.translation import gettext_lazy as _


class TwinRun(models.Model):
    """A digital-twin run feeding one cluster's telemetry.

    ``state`` is the engine's own serialised state; ``tick_seq`` counts committed ticks and is
    what makes a tick exactly-once: a tick for sequence N commits only if the run is still at N.
    """

    class Status(models.TextChoices):
        RUNNING = "running", _("running")
        PAUSED = "paused", _("paused")

    name = models.SlugField(_("name"), max_length=60, unique=True)
    cluster = models.OneToOneField(
        "monitoring.Cluster", on_delete=models.CASCADE, related_name="twin_run"
    )
    scenario = models.JSONField(_("scenario"))
    state = models.BinaryField(_("engine state"))
    status = models.CharField(
        _("status"), max_length=10, choices=Status.choices, default=Status.RUNNING
    )
    steps_per_tick = models.PositiveIntegerField(
        _("simulated steps per tick"),
        default=1,
        validators=[MinValueValidator(1), MaxValueValidator(60)],
        help_text=_("Speed-up: how many engine steps one beat tick advances."),
    )
    fan_out = models.BooleanField(
        _("fan out per supernode"),
        default=False,
        help_text=_("Spread each tick's telemetry work over workers, one task per supernode."),
    )
    tick_seq = models.PositiveBigIntegerField(_("committed ticks"), default=0)
    pool_seq = models.PositiveBigIntegerField(_("committed memory-pool ticks"), default=0)
    sim_time = models.FloatField(_("simulated seconds"), default=0.0)
    wall_start = models.DateTimeField(_("wall-clock time of simulated t=0"))
    last_tick_at = models.DateTimeField(_("last tick"), null=True, blank=True)
    last_tick_ms = models.FloatField(_("last tick duration (ms)"), null=True, blank=True)
    last_pool_tick_at = models.DateTimeField(_("last memory-pool tick"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name = _("twin run")
        verbose_name_plural = _("twin runs")

    def __str__(self) -> str:
        return self.name


class TwinTick(models.Model):
    """One committed tick. Unique per (run, kind, seq): a second commit of a tick fails."""

    class Kind(models.TextChoices):
        SCHEDULER = "scheduler", _("scheduler")
        POOL = "pool", _("memory pool")

    run = models.ForeignKey(TwinRun, on_delete=models.CASCADE, related_name="ticks")
    kind = models.CharField(_("kind"), max_length=10, choices=Kind.choices, default=Kind.SCHEDULER)
    seq = models.PositiveBigIntegerField(_("sequence"))
    sim_time = models.FloatField(_("simulated seconds at end"))
    samples = models.PositiveIntegerField(_("samples written"))
    duration_ms = models.FloatField(_("duration (ms)"))
    committed_at = models.DateTimeField(_("committed at"), auto_now_add=True)

    class Meta:
        ordering = ["run", "-committed_at"]
        verbose_name = _("twin tick")
        verbose_name_plural = _("twin ticks")
        constraints = [
            models.UniqueConstraint(fields=["run", "kind", "seq"], name="twintick_unique_seq")
        ]

    def __str__(self) -> str:
        return f"{self.run.name}#{self.kind}{self.seq}"


class StagedPart(models.Model):
    """One supernode's share of a fanned-out tick, staged until the join commits the tick.

    Staging keeps a tick invisible until every part is ready: readers never see half a tick.
    ``payload`` is the part's rows and frame slices, serialised by ``simulation.services``.
    """

    run = models.ForeignKey(TwinRun, on_delete=models.CASCADE, related_name="+")
    seq = models.PositiveBigIntegerField()
    part = models.PositiveIntegerField()
    payload = models.BinaryField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "seq", "part"], name="stagedpart_unique")
        ]

    def __str__(self) -> str:
        return f"{self.run_id}#{self.seq}/{self.part}"
