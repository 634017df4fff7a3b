"""Migration plans, their phases and the workloads they move (with each one's traffic share)."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from rollout.models.binding import target_counterpart

DEFAULT_GRAY_STEPS = (5, 25, 50, 100)
# Planned windows from the reference plan (pilot 1–2 months, gray 3–4, full 1): the upper end,
# because a migration that finishes early surprises nobody and one that overruns does.
DEFAULT_PHASE_DAYS = {"pilot": 60, "gray": 120, "full": 30}


def default_gray_steps() -> list[int]:
    return list(DEFAULT_GRAY_STEPS)


class PlanState(models.TextChoices):
    DRAFT = "draft", _("draft")
    RUNNING = "running", _("running")
    AWAITING_APPROVAL = "awaiting_approval", _("awaiting approval")
    PAUSED = "paused", _("paused")
    SUCCEEDED = "succeeded", _("succeeded")
    ABORTED = "aborted", _("aborted")
    ROLLED_BACK = "rolled_back", _("rolled back")
    # An abort or rollback whose router did not confirm the source back at 100%: traffic may
    # still be on the target. Alerts (webhook event ``rollback_unconfirmed``) until verified.
    ROLLBACK_UNCONFIRMED = "rollback_unconfirmed", _("rollback unconfirmed")


class PhaseKind(models.TextChoices):
    PILOT = "pilot", _("pilot")
    GRAY = "gray", _("gray")
    FULL = "full", _("full")


PHASE_ORDER: tuple[str, ...] = (PhaseKind.PILOT, PhaseKind.GRAY, PhaseKind.FULL)


def phase_share(workload_phase: str, current_phase: str, gray_percent: int) -> float:
    """The share (0–1) a plan asks on the target for a workload of ``workload_phase`` while
    the plan is in ``current_phase`` at gray step ``gray_percent``: earlier phases (and every
    phase once the plan is in full) all of it, later phases none, the gray phase its step.
    One rule for the transitions (``traffic_apply``) and for the timeline that redraws them."""
    current = PHASE_ORDER.index(current_phase)
    order = PHASE_ORDER.index(workload_phase)
    if order < current or current_phase == PhaseKind.FULL:
        return 1.0
    if order > current:
        return 0.0
    return gray_percent / 100.0 if workload_phase == PhaseKind.GRAY else 1.0


def validate_gray_steps(steps: object) -> None:
    """Steps are whole percentages, strictly increasing, ending at 100 (full gray traffic)."""
    if not isinstance(steps, list) or not steps:
        raise ValidationError(_("Give at least one traffic step, e.g. [5, 25, 50, 100]."))
    if not all(isinstance(s, int) and not isinstance(s, bool) and 1 <= s <= 100 for s in steps):
        raise ValidationError(_("Each traffic step is a whole percentage from 1 to 100."))
    if any(b <= a for a, b in zip(steps, steps[1:], strict=False)):
        raise ValidationError(_("Traffic steps must increase strictly."))
    if steps[-1] != 100:
        raise ValidationError(_("The last traffic step must be 100%."))


class MigrationPlan(models.Model):
    """A tenant's move of named workloads from a legacy/split cluster onto the unified one.

    ``state`` only changes through the transition services (:mod:`rollout.services`), which
    lock this row and bump ``version``; a client may send the version it saw to detect a
    conflicting change (409). ``current_gate`` is the gate the plan is waiting on.
    """

    tenant = models.ForeignKey(
        "monitoring.Tenant",
        verbose_name=_("tenant"),
        on_delete=models.PROTECT,
        related_name="migration_plans",
    )
    name = models.CharField(_("name"), max_length=200)
    source_cluster = models.ForeignKey(
        "inventory.Cluster",
        verbose_name=_("source cluster"),
        on_delete=models.PROTECT,
        related_name="+",
    )
    target_cluster = models.ForeignKey(
        "inventory.Cluster",
        verbose_name=_("target cluster"),
        on_delete=models.PROTECT,
        related_name="+",
    )
    state = models.CharField(
        _("state"), max_length=20, choices=PlanState.choices, default=PlanState.DRAFT
    )
    current_phase = models.CharField(
        _("current phase"), max_length=10, choices=PhaseKind.choices, blank=True
    )
    gray_steps = models.JSONField(
        _("gray traffic steps (%)"), default=default_gray_steps, validators=[validate_gray_steps]
    )
    gray_step_index = models.PositiveSmallIntegerField(_("current gray step"), default=0)
    required_approvals = models.PositiveSmallIntegerField(
        _("approvals required per gate"),
        default=2,
        validators=[MinValueValidator(1), MaxValueValidator(10)],
    )
    current_gate = models.ForeignKey(
        "rollout.Gate",
        verbose_name=_("current gate"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    router = models.ForeignKey(
        "rollout.TrafficRouter",
        verbose_name=_("traffic router"),
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="plans",
        help_text=_("What moves the traffic; empty: the digital twin. A workload may override it."),
    )
    # Where a manual pause returns to on resume (running or awaiting approval).
    resume_state = models.CharField(max_length=20, choices=PlanState.choices, blank=True)
    version = models.PositiveIntegerField(_("version"), default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("created by"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = _("migration plan")
        verbose_name_plural = _("migration plans")
        constraints = [
            models.UniqueConstraint(fields=["tenant", "name"], name="plan_unique_name"),
            models.CheckConstraint(
                condition=Q(required_approvals__gte=1), name="plan_needs_an_approval"
            ),
            models.CheckConstraint(
                condition=~Q(source_cluster=models.F("target_cluster")),
                name="plan_source_is_not_target",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        errors = {}
        if self.source_cluster_id and self.source_cluster.kind == "unified":
            errors["source_cluster"] = _("The source must be a legacy or split cluster.")
        if self.target_cluster_id and self.target_cluster.kind != "unified":
            errors["target_cluster"] = _("The target must be the unified cluster.")
        if errors:
            raise ValidationError(errors)

    @property
    def current_step_percent(self) -> int | None:
        if self.current_phase != PhaseKind.GRAY:
            return None
        return self.gray_steps[self.gray_step_index]

    @property
    def is_finished(self) -> bool:
        return self.state in (PlanState.SUCCEEDED, PlanState.ABORTED)


class Phase(models.Model):
    """One of pilot, gray, full: its planned window (dates) and when it really ran."""

    plan = models.ForeignKey(MigrationPlan, on_delete=models.CASCADE, related_name="phases")
    kind = models.CharField(_("phase"), max_length=10, choices=PhaseKind.choices)
    planned_start = models.DateField(_("planned start"))
    planned_end = models.DateField(_("planned end"))
    actual_start = models.DateTimeField(_("actual start"), null=True, blank=True)
    actual_end = models.DateTimeField(_("actual end"), null=True, blank=True)
    manual_gate = models.BooleanField(
        _("manual gate"),
        default=False,
        help_text=_(
            "No telemetry criteria: the gate passes without analysis and only approvers "
            "decide. Chosen explicitly (and audited); a gate with neither criteria nor this "
            "choice cannot start."
        ),
    )

    class Meta:
        ordering = ["plan", "planned_start"]
        verbose_name = _("phase")
        verbose_name_plural = _("phases")
        constraints = [
            models.UniqueConstraint(fields=["plan", "kind"], name="phase_unique_kind"),
            models.CheckConstraint(
                condition=Q(planned_end__gt=models.F("planned_start")),
                name="phase_window_positive",
                violation_error_message=_("A phase must end after it starts."),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.plan} · {self.get_kind_display()}"

    @property
    def order(self) -> int:
        return PHASE_ORDER.index(self.kind)


# States in which a plan still holds its workloads: traffic is moving (or may still be on
# the target, ``rollback_unconfirmed``), so no second plan may take them.
HOLDING_STATES: tuple[str, ...] = (
    PlanState.RUNNING,
    PlanState.AWAITING_APPROVAL,
    PlanState.PAUSED,
    PlanState.ROLLBACK_UNCONFIRMED,
)


def moved_elsewhere() -> Q:
    """Plan workloads that rule their workload out of a new plan: held by a plan in flight,
    or fully moved (100% on the target) by a plan that succeeded. A rolled-back or aborted
    plan gives its workloads back; a draft holds nothing yet."""
    return Q(plan__state__in=HOLDING_STATES) | Q(plan__state=PlanState.SUCCEEDED, share__gte=1.0)


class PlanWorkload(models.Model):
    """A workload the plan moves, the phase that moves it and its traffic share on the target.

    ``share`` is what the twin (and a real router) sends to the unified cluster now;
    ``stable_share`` the share of the last step whose gate was approved, where an abort or an
    automatic rollback returns it. The source cluster carries the complement.
    ``router`` (else the plan's, else the twin) moves it, ``confirmed_share`` is what that
    router read back. ``target_workload`` is the workload's identity on the target cluster
    (the same tenant's workload of the same name there; empty while the target has none):
    traffic and gates follow it, never the name (``rollout.models.binding``).
    """

    plan = models.ForeignKey(MigrationPlan, on_delete=models.CASCADE, related_name="workloads")
    workload = models.ForeignKey(
        "inventory.Workload", verbose_name=_("workload"), on_delete=models.PROTECT
    )
    target_workload = models.ForeignKey(
        "inventory.Workload",
        verbose_name=_("workload on the target"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    phase = models.CharField(_("phase"), max_length=10, choices=PhaseKind.choices)
    share = models.FloatField(
        _("traffic share on target"),
        default=0.0,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
    )
    stable_share = models.FloatField(_("last stable share"), default=0.0)
    router = models.ForeignKey(
        "rollout.TrafficRouter",
        verbose_name=_("traffic router"),
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="plan_workloads",
        help_text=_("Overrides the plan's router for this workload."),
    )
    # What the router read back after the last call (0–1), and when: a step's analysis clock
    # starts here, never at the portal's own commit. Null: not confirmed (yet).
    confirmed_share = models.FloatField(_("confirmed share on target"), null=True, blank=True)
    confirmed_at = models.DateTimeField(_("share confirmed at"), null=True, blank=True)

    class Meta:
        ordering = ["plan", "phase", "workload__name"]
        verbose_name = _("plan workload")
        verbose_name_plural = _("plan workloads")
        constraints = [
            models.UniqueConstraint(fields=["plan", "workload"], name="planworkload_unique"),
            models.CheckConstraint(
                condition=Q(share__gte=0) & Q(share__lte=1), name="planworkload_share_range"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.plan} · {self.workload}"

    def clean(self) -> None:
        if not self.workload_id or not self.plan_id:
            return
        workload = self.workload
        if self.phase == PhaseKind.PILOT and workload.criticality != "non_core":
            raise ValidationError(
                {
                    "workload": _(
                        "The pilot takes non-core workloads only: %(name)s is core business; "
                        "move it in the gray phase."
                    )
                    % {"name": workload.name}
                }
            )
        if workload.tenant_id != self.plan.tenant_id:
            raise ValidationError({"workload": _("The workload belongs to another tenant.")})
        if workload.cluster_id != self.plan.source_cluster_id:
            raise ValidationError(
                {"workload": _("The workload does not run on the plan's source cluster.")}
            )
        if self.target_workload_id is None:
            self.target_workload = target_counterpart(
                workload=workload,
                target_cluster_id=self.plan.target_cluster_id,
                tenant_id=self.plan.tenant_id,
            )
            return
        target = self.target_workload
        if target.tenant_id != self.plan.tenant_id:
            raise ValidationError({"target_workload": _("The workload belongs to another tenant.")})
        if target.cluster_id != self.plan.target_cluster_id:
            raise ValidationError(
                {"target_workload": _("It must run on the plan's target cluster.")}
            )
