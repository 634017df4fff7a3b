"""Gates between phases and gray steps, their telemetry criteria and the approvals they got."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from rollout.models.binding import criterion_bind
from rollout.models.plans import MigrationPlan, Phase

MAX_WINDOW_SECONDS = 6 * 3600  # raw telemetry (what percentiles need) is kept at least 6 h


class Aggregation(models.TextChoices):
    P50 = "p50", _("p50")
    P95 = "p95", _("p95")
    P99 = "p99", _("p99")
    MEAN = "mean", _("mean")
    MAX = "max", _("max")
    MIN = "min", _("min")
    # A counter's increase per second over the window (max − min: counters only grow).
    RATE = "rate", _("rate (per second)")


class Comparator(models.TextChoices):
    LT = "lt", "<"
    LE = "le", "≤"
    GT = "gt", ">"
    GE = "ge", "≥"


class BaselineWindow(models.TextChoices):
    """Which source figure a relative criterion compares with (both scaled to the target's
    hardware by the twin's model of the two accelerators)."""

    PRE_MOVE = "pre_move", _("the source before the move")
    # Kayenta's live baseline: the source's share of the same traffic over the same window.
    SAME_WINDOW = "same_window", _("the source over the same window (canary vs baseline)")


class Criterion(models.Model):
    """A condition on telemetry a gate of ``phase`` must meet, with its analysis settings.

    The value is ``aggregation`` of ``metric`` for the entity ``entity_kind``/``entity_key``
    on the plan's target cluster over the last ``window_seconds``; the measurement succeeds
    when ``value comparator threshold`` holds. With ``compare_to_baseline`` the threshold is
    a factor of the same aggregate on the source cluster over the **pre-move window** (the
    ``window_seconds`` before the workload's traffic first left the source), captured when
    the analysis run starts (``TTFT p99 ≤ 1.2 × source TTFT p99``). The analysis settings
    follow Argo Rollouts' metric fields.

    A workload criterion names its workload by **identity** (``workload``, on the target
    cluster, and for a relative criterion ``baseline_workload`` on the source), never by
    name: ``entity_key`` is only the name shown, copied from the workload. A name given
    without an id (older API clients) is resolved once, when the criterion is saved, and
    refused when it does not identify one of the plan's tenant's workloads on the target.
    """

    phase = models.ForeignKey(Phase, on_delete=models.CASCADE, related_name="criteria")
    name = models.SlugField(_("name"), max_length=80)
    metric = models.CharField(_("metric"), max_length=200)
    entity_kind = models.CharField(_("entity kind"), max_length=20, default="workload")
    entity_key = models.CharField(
        _("entity"),
        max_length=300,
        blank=True,
        help_text=_(
            "'cluster' for cluster-wide figures; for a workload, its name (copied from the "
            "workload chosen, or resolved once to the plan's tenant's workload of that name)."
        ),
    )
    workload = models.ForeignKey(
        "inventory.Workload",
        verbose_name=_("workload"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text=_("The workload measured, on the plan's target cluster (by identity)."),
    )
    baseline_workload = models.ForeignKey(
        "inventory.Workload",
        verbose_name=_("baseline workload"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text=_(
            "Relative criteria: the workload on the source cluster whose pre-move window is "
            "the baseline (by default the one the plan moves onto the measured workload)."
        ),
    )
    aggregation = models.CharField(_("aggregation"), max_length=4, choices=Aggregation.choices)
    comparator = models.CharField(_("comparator"), max_length=2, choices=Comparator.choices)
    threshold = models.FloatField(_("threshold"))
    window_seconds = models.PositiveIntegerField(
        _("window (s)"),
        default=300,
        validators=[MinValueValidator(10), MaxValueValidator(MAX_WINDOW_SECONDS)],
    )
    compare_to_baseline = models.BooleanField(
        _("relative to the source cluster"),
        default=False,
        help_text=_("The threshold is then a factor of the same figure on the source cluster."),
    )
    baseline_window = models.CharField(
        _("baseline window"),
        max_length=12,
        choices=BaselineWindow.choices,
        default=BaselineWindow.PRE_MOVE,
        help_text=_(
            "Relative criteria: the source's pre-move window, or the source's remaining traffic "
            "over the same window as the canary (a live baseline, gray steps)."
        ),
    )
    dry_run = models.BooleanField(
        _("dry run"), default=False, help_text=_("Measured and shown, never decides the gate.")
    )
    count = models.PositiveSmallIntegerField(
        _("measurements"), default=3, validators=[MinValueValidator(1), MaxValueValidator(1000)]
    )
    interval_seconds = models.PositiveIntegerField(
        _("interval (s)"), default=30, validators=[MinValueValidator(5)]
    )
    initial_delay_seconds = models.PositiveIntegerField(
        _("initial delay (s)"),
        null=True,
        blank=True,
        help_text=_(
            "Wait this long after the step's traffic took effect before the first measurement; "
            "empty: two telemetry intervals, at least one twin tick."
        ),
    )
    min_samples = models.PositiveIntegerField(
        _("minimum values"),
        default=3,
        validators=[MinValueValidator(1)],
        help_text=_(
            "Fewer values stamped inside the step than this make a measurement inconclusive."
        ),
    )
    failure_limit = models.PositiveSmallIntegerField(_("failure limit"), default=0)
    inconclusive_limit = models.PositiveSmallIntegerField(_("inconclusive limit"), default=0)
    consecutive_error_limit = models.PositiveSmallIntegerField(
        _("consecutive error limit"), default=4
    )
    error_retry_seconds = models.PositiveIntegerField(
        _("retry after an error (s)"), default=10, validators=[MinValueValidator(1)]
    )
    # Which writers' values this criterion counts (telemetry.store.provenance): empty is the
    # default, the twin and the cluster's configured exporters and data source — never a push by a
    # person's or a tenant's token, so nobody can write the numbers that decide their gate.
    trusted_sources = models.JSONField(
        _("trusted sources"),
        default=list,
        blank=True,
        help_text=_(
            'Empty: the twin and the cluster\'s exporters and data source. Or a list of "twin", '
            '"exporters", "exporter:<name>", "datasource", "token:<id>" (operator-level only).'
        ),
    )

    class Meta:
        ordering = ["phase", "name"]
        verbose_name = _("gate criterion")
        verbose_name_plural = _("gate criteria")
        constraints = [
            models.UniqueConstraint(fields=["phase", "name"], name="criterion_unique_name"),
            models.CheckConstraint(
                condition=Q(window_seconds__gte=10) & Q(window_seconds__lte=MAX_WINDOW_SECONDS),
                name="criterion_window_range",
            ),
            models.CheckConstraint(condition=Q(count__gte=1), name="criterion_count_positive"),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        from telemetry.models import MetricDefinition

        if self.metric and not MetricDefinition.objects.filter(name=self.metric).exists():
            raise ValidationError({"metric": _("Unknown metric: not in the catalogue.")})
        from telemetry.read import trust_selector_problems

        problems = trust_selector_problems(self.trusted_sources)
        if problems:
            raise ValidationError({"trusted_sources": problems})
        if self.compare_to_baseline and self.threshold is not None and self.threshold <= 0:
            raise ValidationError(
                {"threshold": _("Against the source baseline the threshold is a factor > 0.")}
            )
        if self.entity_kind != "workload" and not self.entity_key:
            raise ValidationError({"entity_key": _("Name the entity, e.g. 'cluster'.")})
        if self.phase_id is not None:
            criterion_bind(self)

    def describe(self) -> str:
        """``p99(inference_ttft_p99_seconds[chat #12], 80s) ≤ 1.2 × source`` — what the UI
        shows (the workload's id after its name: names are not identities)."""
        source = " × source" if self.baseline_window == BaselineWindow.PRE_MOVE else " × baseline"
        target = f"{self.threshold:g}" + (source if self.compare_to_baseline else "")
        entity = self.entity_key + (f" #{self.workload_id}" if self.workload_id else "")
        trusted = f" trusting {', '.join(self.trusted_sources)}" if self.trusted_sources else ""
        return (
            f"{self.aggregation}({self.metric}[{entity}], {self.window_seconds}s) "
            f"{self.get_comparator_display()} {target}{trusted}"
        )


class GateState(models.TextChoices):
    ANALYSING = "analysing", _("analysing")
    PASSED = "passed", _("analysis passed")
    INCONCLUSIVE = "inconclusive", _("inconclusive")
    AWAITING_APPROVAL = "awaiting_approval", _("awaiting approval")
    REJECTED = "rejected", _("rejected")
    FAILED = "failed", _("failed")
    APPROVED = "approved", _("approved")
    FORCED = "forced", _("force-promoted")
    ABORTED = "aborted", _("aborted")
    # The router refused, timed out or confirmed another share: no analysis ran (retry).
    TRAFFIC_UNCONFIRMED = "traffic_unconfirmed", _("traffic not confirmed")


class Gate(models.Model):
    """The checkpoint closing a phase (pilot, full) or a gray step.

    ``revision`` grows whenever what is being approved changes (a retried analysis, edited
    criteria): approvals are bound to one revision and never carry over to the next.
    """

    plan = models.ForeignKey(MigrationPlan, on_delete=models.CASCADE, related_name="gates")
    phase = models.ForeignKey(Phase, on_delete=models.CASCADE, related_name="gates")
    step_index = models.PositiveSmallIntegerField(_("gray step"), default=0)
    state = models.CharField(
        _("state"), max_length=20, choices=GateState.choices, default=GateState.ANALYSING
    )
    revision = models.PositiveIntegerField(_("revision"), default=1)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("promotion requested by"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    requested_at = models.DateTimeField(_("requested at"), null=True, blank=True)
    # An override: promotion requested past an analysis that did not pass (its own command,
    # rollout.services.overrides) — the outcome overridden and the requester's reason.
    override_of = models.CharField(
        _("overrides an analysis that was"), max_length=20, blank=True, default=""
    )
    override_reason = models.TextField(_("override reason"), blank=True, default="")
    decided_at = models.DateTimeField(_("decided at"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        ordering = ["plan", "id"]
        verbose_name = _("gate")
        verbose_name_plural = _("gates")
        constraints = [
            models.UniqueConstraint(
                fields=["plan", "phase", "step_index"], name="gate_unique_checkpoint"
            )
        ]

    def __str__(self) -> str:
        return f"{self.plan} · {self.label}"

    @property
    def label(self) -> str:
        if self.phase.kind == "gray":
            return _("gray %(percent)s%%") % {"percent": self.plan.gray_steps[self.step_index]}
        return str(self.phase.get_kind_display())


class Approval(models.Model):
    """One person's decision on one revision of a gate.

    ``approve`` or ``reject`` (with a reason; a person who approved and then rejects turns
    their row into the rejection), or a break-glass ``force`` vote. ``user`` is the person —
    also when they acted through a token (``principal`` then names the token) — and each
    person decides once per revision.
    """

    class Decision(models.TextChoices):
        APPROVE = "approve", _("approve")
        REJECT = "reject", _("reject")
        FORCE = "force", _("force (break-glass)")

    gate = models.ForeignKey(Gate, on_delete=models.CASCADE, related_name="approvals")
    revision = models.PositiveIntegerField(_("gate revision"))
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    principal = models.CharField(_("approver"), max_length=200)
    decision = models.CharField(_("decision"), max_length=10, choices=Decision.choices)
    comment = models.TextField(_("comment"), blank=True)
    # The approval was given on an override (the gate's analysis did not pass): it says so.
    override = models.BooleanField(_("override"), default=False)
    created_at = models.DateTimeField(_("at"), auto_now_add=True)

    class Meta:
        ordering = ["gate", "created_at", "id"]
        verbose_name = _("approval")
        verbose_name_plural = _("approvals")
        constraints = [
            models.UniqueConstraint(
                fields=["gate", "revision", "user"],
                condition=Q(decision__in=["approve", "reject"]),
                name="approval_one_decision_per_person",
            ),
            models.UniqueConstraint(
                fields=["gate", "revision", "user"],
                condition=Q(decision="force"),
                name="approval_one_force_vote_per_person",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.principal} {self.decision} {self.gate} r{self.revision}"


__all__ = [
    "Aggregation",
    "Approval",
    "BaselineWindow",
    "Comparator",
    "Criterion",
    "Gate",
    "GateState",
]
