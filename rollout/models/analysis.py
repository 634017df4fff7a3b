"""Analysis runs (Argo Rollouts semantics): one per gate revision, one result per criterion."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from rollout.labels import reason_text
from rollout.models.gates import Criterion, Gate


class Outcome(models.TextChoices):
    """A measurement's, a metric's or a run's phase (``running`` only for metrics and runs)."""

    RUNNING = "running", _("running")
    SUCCESSFUL = "successful", _("successful")
    FAILED = "failed", _("failed")
    INCONCLUSIVE = "inconclusive", _("inconclusive")
    ERROR = "error", _("error")
    TERMINATED = "terminated", _("terminated")


class AnalysisRun(models.Model):
    """The evaluation of a gate's criteria for one gate revision."""

    gate = models.ForeignKey(Gate, on_delete=models.CASCADE, related_name="runs")
    gate_revision = models.PositiveIntegerField(_("gate revision"))
    status = models.CharField(
        _("status"), max_length=20, choices=Outcome.choices, default=Outcome.RUNNING
    )
    message = models.CharField(_("message"), max_length=500, blank=True)
    # The message as a code and parameters (rollout/labels.py), translated when shown.
    message_data = models.JSONField(_("message code"), null=True, blank=True, editable=False)
    started_at = models.DateTimeField(_("started at"))
    # When the step's traffic took effect: only data stamped after it counts (Argo semantics).
    traffic_at = models.DateTimeField(_("step traffic since"), null=True, blank=True)
    finished_at = models.DateTimeField(_("finished at"), null=True, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]
        verbose_name = _("analysis run")
        verbose_name_plural = _("analysis runs")
        indexes = [models.Index(fields=["status"], name="analysisrun_status")]

    def __str__(self) -> str:
        return f"{self.gate} r{self.gate_revision}: {self.status}"

    @property
    def message_display(self) -> str:
        return reason_text(self.message_data, self.message, outcomes=dict(Outcome.choices))


class MetricResult(models.Model):
    """One criterion's progress inside a run: counters, its own phase, when it is next due.

    ``spec`` snapshots the criterion as it was measured, so editing a criterion later does
    not rewrite history. ``taken`` counts measurements that use up ``count`` (not errors).

    A relative criterion's **baseline** is captured when the run starts and stored here: the
    criterion's aggregate on the source cluster over the pre-move window
    ``[baseline_start, baseline_end]`` (``baseline_end``: when the workload's traffic first
    left the source). Every measurement of the run compares with this one figure, never with
    the source after its traffic left.
    """

    run = models.ForeignKey(AnalysisRun, on_delete=models.CASCADE, related_name="metrics")
    criterion = models.ForeignKey(Criterion, null=True, on_delete=models.SET_NULL)
    name = models.CharField(_("criterion"), max_length=80)
    spec = models.JSONField(_("criterion as measured"))
    dry_run = models.BooleanField(_("dry run"), default=False)
    status = models.CharField(
        _("status"), max_length=20, choices=Outcome.choices, default=Outcome.RUNNING
    )
    taken = models.PositiveIntegerField(default=0)
    successful = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    inconclusive = models.PositiveIntegerField(default=0)
    errors = models.PositiveIntegerField(default=0)
    consecutive_errors = models.PositiveIntegerField(default=0)
    next_at = models.DateTimeField(_("next measurement"), null=True, blank=True)
    baseline_value = models.FloatField(_("source baseline (pre-move)"), null=True, blank=True)
    baseline_samples = models.PositiveIntegerField(_("values in the baseline window"), default=0)
    baseline_start = models.DateTimeField(_("baseline window start"), null=True, blank=True)
    baseline_end = models.DateTimeField(_("baseline window end"), null=True, blank=True)
    # The twin's model of both accelerators for this workload: expected on the target =
    # baseline × expected_scale ("15.41 on H100 → expected 8.2 on 910B"); the note says how.
    expected_scale = models.FloatField(_("target/source scale (twin)"), null=True, blank=True)
    expected_note = models.CharField(_("how the scale was modelled"), max_length=300, blank=True)
    stopped_early = models.BooleanField(_("stopped early"), default=False)

    class Meta:
        ordering = ["run", "name"]
        verbose_name = _("metric result")
        verbose_name_plural = _("metric results")

    def __str__(self) -> str:
        return f"{self.name}: {self.status}"


class Measurement(models.Model):
    """One evaluation of a criterion: the value, what it was compared with, and why."""

    result = models.ForeignKey(MetricResult, on_delete=models.CASCADE, related_name="measurements")
    seq = models.PositiveIntegerField(_("number"))
    outcome = models.CharField(_("outcome"), max_length=20, choices=Outcome.choices)
    value = models.FloatField(_("value"), null=True, blank=True)
    baseline = models.FloatField(_("source baseline"), null=True, blank=True)
    threshold = models.FloatField(_("effective threshold"), null=True, blank=True)
    samples = models.PositiveIntegerField(_("values in window"), default=0)
    window_start = models.DateTimeField(_("window start"))
    window_end = models.DateTimeField(_("window end"))
    reason = models.CharField(_("why"), max_length=500)
    # The reason as a code and parameters (rollout/labels.py), translated when shown.
    reason_data = models.JSONField(_("reason code"), null=True, blank=True, editable=False)
    # Where the window's values came from: {"counted": {source: n}, "ignored": {source: n}}
    # (telemetry.store.provenance labels), so approvers see whose numbers decided the gate.
    evidence = models.JSONField(_("evidence"), default=dict, blank=True, editable=False)
    taken_at = models.DateTimeField(_("taken at"))

    class Meta:
        ordering = ["result", "seq"]
        verbose_name = _("measurement")
        verbose_name_plural = _("measurements")
        constraints = [
            models.UniqueConstraint(fields=["result", "seq"], name="measurement_unique_seq")
        ]

    def __str__(self) -> str:
        return f"{self.result.name} #{self.seq}: {self.outcome}"

    @property
    def reason_display(self) -> str:
        return reason_text(self.reason_data, self.reason, outcomes=dict(Outcome.choices))
