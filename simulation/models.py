"""Twin runs and their ticks: the Django side of the digital twin."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

MAX_WHATIF_SEEDS = 10  # a what-if runs split and unified once per seed: keep it bounded


class TwinRun(models.Model):
    """A digital-twin run feeding one cluster's telemetry.

    ``state`` is a checkpoint of the engine's own serialised state: it includes the ticks up
    to ``checkpoint_seq`` / ``checkpoint_pool_seq``; the ticks after it are in the journal
    (``TwinTick.inputs``), so checkpoint + journal is the run's committed state. ``tick_seq``
    counts committed ticks and is what makes a tick exactly-once: a tick for sequence N
    commits only if the run is still at N. ``state_epoch`` moves when the state is replaced
    (reset), so no worker reuses an engine it kept from before.
    """

    class Status(models.TextChoices):
        RUNNING = "running", _("running")
        PAUSED = "paused", _("paused")

    name = models.SlugField(_("name"), max_length=60, unique=True)
    cluster = models.OneToOneField(
        "inventory.Cluster", on_delete=models.CASCADE, related_name="twin_run"
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
    tick_seq = models.PositiveBigIntegerField(_("committed ticks"), default=0)
    pool_seq = models.PositiveBigIntegerField(_("committed memory-pool ticks"), default=0)
    checkpoint_seq = models.PositiveBigIntegerField(_("ticks in the checkpoint"), default=0)
    checkpoint_pool_seq = models.PositiveBigIntegerField(
        _("memory-pool ticks in the checkpoint"), default=0
    )
    state_epoch = models.PositiveIntegerField(_("state epoch"), default=0)
    checkpoint_ms = models.FloatField(_("last checkpoint duration (ms)"), default=0.0)
    sim_time = models.FloatField(_("simulated seconds"), default=0.0)
    wall_start = models.DateTimeField(_("wall-clock time of simulated t=0"))
    last_tick_at = models.DateTimeField(_("last tick"), null=True, blank=True)
    last_tick_ms = models.FloatField(_("last tick duration (ms)"), null=True, blank=True)
    last_pool_tick_at = models.DateTimeField(_("last memory-pool tick"), null=True, blank=True)
    # A paused run is not late: tick gaps are measured from the later of the last tick and
    # the last (re)start.
    resumed_at = models.DateTimeField(_("last started"), null=True, blank=True)
    # Why the run stopped by itself (its saved state could not be read); cleared on reset.
    last_error = models.CharField(_("last error"), max_length=500, blank=True, default="")
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
    # What the tick fed the engine (scheduler: traffic shares applied and steps taken; pool:
    # seconds), so the checkpoint plus the ticks after it rebuild the state exactly.
    inputs = models.JSONField(_("inputs"), default=dict, blank=True)
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


class TwinGap(models.Model):
    """A stretch of wall-clock time in which a running run committed no tick (and so no data).

    Recorded by the first tick after the gap (a broker or worker outage, beat down): the twin
    does not fill the interval with fabricated telemetry, it resumes at the present and says
    which interval is missing.
    """

    run = models.ForeignKey(TwinRun, on_delete=models.CASCADE, related_name="gaps")
    seq = models.PositiveBigIntegerField(_("first tick after the gap"))
    started_at = models.DateTimeField(_("no data from"))
    ended_at = models.DateTimeField(_("data again from"))
    seconds = models.FloatField(_("gap (s)"))
    missed_ticks = models.PositiveIntegerField(_("missed ticks"))

    class Meta:
        ordering = ["run", "-ended_at"]
        verbose_name = _("twin tick gap")
        verbose_name_plural = _("twin tick gaps")
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="twingap_unique_seq")]

    def __str__(self) -> str:
        return f"{self.run.name} gap {self.seconds:.0f}s before #{self.seq}"


class WhatIfRun(models.Model):
    """A background split-vs-unified comparison on a chosen scenario or an uploaded trace.

    The trace is stored as text (validated with the engine's readers before saving), so a
    worker on any host can run it. ``result`` holds both policies' summaries and the
    down-sampled per-step series the page charts.
    """

    class Status(models.TextChoices):
        QUEUED = "queued", _("queued")
        RUNNING = "running", _("running")
        DONE = "done", _("done")
        FAILED = "failed", _("failed")

    class TraceKind(models.TextChoices):
        NONE = "", _("none (the default workload mix)")
        AZURE = "azure", _("Azure LLM inference CSV")
        PHILLY = "philly", _("Philly training CSV")

    cards = models.PositiveIntegerField(
        _("cards"), default=256, validators=[MinValueValidator(64), MaxValueValidator(4096)]
    )
    hardware = models.CharField(_("accelerator"), max_length=40, default="ascend-950dt")
    hours = models.FloatField(
        _("simulated hours"), default=6.0, validators=[MinValueValidator(1), MaxValueValidator(48)]
    )
    seed = models.PositiveIntegerField(_("random seed"), default=7)
    # Issue 25 part 4: split and unified run on seeds seed..seed+seeds-1 so every figure has a
    # spread; the ablation runs on the first seed only (it is five runs per seed).
    seeds = models.PositiveSmallIntegerField(
        _("seeds"),
        default=3,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_WHATIF_SEEDS)],
        help_text=_("Split and unified run on this many seeds; every figure shows its spread."),
    )
    trace_kind = models.CharField(
        _("trace format"), max_length=10, choices=TraceKind.choices, blank=True, default=""
    )
    trace_name = models.CharField(_("trace file"), max_length=200, blank=True)
    trace_text = models.TextField(_("trace"), blank=True)
    serve_model = models.CharField(
        _("inference model"),
        max_length=64,
        blank=True,
        help_text=_("Empty: the default model mix. Otherwise every inference service serves it."),
    )
    status = models.CharField(
        _("status"), max_length=10, choices=Status.choices, default=Status.QUEUED
    )
    progress = models.FloatField(
        _("progress"), default=0.0, validators=[MinValueValidator(0), MaxValueValidator(1)]
    )
    result = models.JSONField(_("result"), null=True, blank=True)
    error = models.TextField(_("error"), blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("created by"),
        null=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    started_at = models.DateTimeField(_("started at"), null=True, blank=True)
    finished_at = models.DateTimeField(_("finished at"), null=True, blank=True)
    # The task execution that owns the run (its Celery task id): a redelivery of that task may
    # start the run over, any other copy (the sweep's) leaves it alone while it runs.
    claimed_by = models.CharField(_("claimed by task"), max_length=64, blank=True)
    # When the periodic sweep last re-sent the task of a run still queued.
    redispatched_at = models.DateTimeField(_("re-dispatched at"), null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("what-if run")
        verbose_name_plural = _("what-if runs")
        constraints = [
            models.CheckConstraint(
                condition=models.Q(progress__gte=0) & models.Q(progress__lte=1),
                name="whatifrun_progress_0_1",
            )
        ]

    def __str__(self) -> str:
        return f"what-if #{self.pk}"

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)


class CatalogModel(models.Model):
    """A model added on day 0 from its published Hugging Face ``config.json``.

    ``spec`` is the engine's ``ModelSpec`` (``models_hf.model_from_hf_config``), kept in the
    database so every web and worker process registers the same model before it builds a
    scenario (``simulation.services.catalog.catalog_models_register``).
    """

    model_id = models.SlugField(_("model id"), max_length=64, unique=True)
    name = models.CharField(_("name"), max_length=200)
    config = models.JSONField(_("config.json"))
    spec = models.JSONField(_("engine model spec"))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("added by"),
        null=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(_("added at"), auto_now_add=True)

    class Meta:
        ordering = ["model_id"]
        verbose_name = _("catalog model")
        verbose_name_plural = _("catalog models")

    def __str__(self) -> str:
        return self.model_id
