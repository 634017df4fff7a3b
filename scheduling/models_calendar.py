"""Day/night window calendars per cluster: the revisions operators propose and approvers sign
(four eyes, revision-bound), each application to the scheduler with what was asked and what
the scheduler confirmed, and the calendar's append-only audit trail."""

from __future__ import annotations

import zoneinfo

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

# Slurm names (partitions, nodes, accounts) the portal passes to scontrol as arguments:
# nothing that could be read as a second key=value or an option.
slurm_name = RegexValidator(
    r"^[A-Za-z0-9_.\-]+$", _("A Slurm name: letters, digits, '.', '_' or '-' only.")
)
k8s_name = RegexValidator(
    r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", _("A Kubernetes object name (lower case, '-', '.').")
)
resource_name = RegexValidator(
    r"^[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?$",
    _("A Kubernetes resource name such as nvidia.com/gpu."),
)


def _names(value, field: str, *, required: bool = False) -> None:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValidationError({field: _("A list of names.")})
    if required and not value:
        raise ValidationError({field: _("At least one name.")})
    for name in value:
        try:
            slurm_name(name)
        except ValidationError as exc:
            raise ValidationError({field: f"{name!r}: {exc.messages[0]}"}) from None
    if len(set(value)) != len(value):
        raise ValidationError({field: _("A name appears twice.")})


class WindowCalendar(models.Model):
    """A cluster's day/night window calendar: its revisions (``revision`` is the newest
    number handed out) and the one last applied to the scheduler."""

    cluster = models.OneToOneField(
        "inventory.Cluster", on_delete=models.CASCADE, related_name="window_calendar"
    )
    revision = models.PositiveIntegerField(_("newest revision"), default=0)
    applied = models.ForeignKey(
        "scheduling.CalendarRevision",
        verbose_name=_("applied revision"),
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )

    class Meta:
        ordering = ["cluster__name"]
        verbose_name = _("window calendar")
        verbose_name_plural = _("window calendars")

    def __str__(self) -> str:
        return f"{self.cluster} r{self.revision}"


class CalendarRevision(models.Model):
    """One proposed calendar, immutable once proposed: by day (local ``day_start`` to
    ``day_end`` in ``timezone``; may cross midnight) inference holds ``inference_partition``'s
    nodes through a DAILY Slurm reservation (or the Kueue ClusterQueue gets ``day_quota``); by
    night training may use them (``night_quota``). Applying it in the day window also defers
    pending jobs of ``training_partitions`` asking at least ``defer_min_cards`` cards to the
    night. Only an approved revision that is still the calendar's newest may be applied."""

    class State(models.TextChoices):
        PROPOSED = "proposed", _("proposed")
        APPROVED = "approved", _("approved")
        REJECTED = "rejected", _("rejected")
        SUPERSEDED = "superseded", _("superseded")

    calendar = models.ForeignKey(WindowCalendar, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveIntegerField(_("revision"))
    state = models.CharField(
        _("state"), max_length=20, choices=State.choices, default=State.PROPOSED
    )
    timezone = models.CharField(_("time zone"), max_length=60, default="UTC")
    day_start = models.TimeField(_("day starts"))
    day_end = models.TimeField(_("day ends"))
    # Slurm: the reservation.
    inference_partition = models.CharField(
        _("inference partition"), max_length=100, blank=True, validators=[slurm_name]
    )
    inference_nodes = models.JSONField(
        _("inference nodes"),
        default=list,
        blank=True,
        help_text=_("Empty: the partition's nodes as last synced."),
    )
    inference_accounts = models.JSONField(
        _("inference accounts"),
        default=list,
        blank=True,
        help_text=_("Slurm accounts allowed into the day reservation (Slurm needs at least one)."),
    )
    training_partitions = models.JSONField(_("training partitions"), default=list, blank=True)
    defer_min_cards = models.PositiveIntegerField(
        _("defer jobs asking at least (cards)"),
        default=1,
        validators=[MinValueValidator(0), MaxValueValidator(100_000)],
    )
    slurm_conf = models.CharField(
        _("slurm.conf for scontrol"),
        max_length=500,
        blank=True,
        help_text=_("Absolute path on the portal's hosts; empty: scontrol's default."),
    )
    # Kubernetes: the ClusterQueue quota.
    cluster_queue = models.CharField(
        _("Kueue ClusterQueue"), max_length=253, blank=True, validators=[k8s_name]
    )
    flavor = models.CharField(
        _("resource flavor"), max_length=253, blank=True, validators=[k8s_name]
    )
    resource = models.CharField(
        _("resource"), max_length=253, blank=True, validators=[resource_name]
    )
    day_quota = models.PositiveIntegerField(_("day nominal quota"), null=True, blank=True)
    night_quota = models.PositiveIntegerField(_("night nominal quota"), null=True, blank=True)

    reason = models.TextField(_("reason"), blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+", null=True
    )
    requested_at = models.DateTimeField(_("requested at"), auto_now_add=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+", null=True, blank=True
    )
    decided_at = models.DateTimeField(_("decided at"), null=True, blank=True)
    decision_note = models.TextField(_("decision note"), blank=True)
    # The twin's what-if of this revision (simulation.selectors_calendar), the figure to read
    # before signing: ``{"state": "queued" | "done" | "failed", "at": ISO, "result": {…},
    # "error": str}``. Written by scheduling.services.calendar only; not part of what is
    # approved (the revision's own fields are).
    whatif = models.JSONField(_("what-if"), null=True, blank=True, editable=False)

    class Meta:
        ordering = ["calendar", "-number"]
        constraints = [
            models.UniqueConstraint(
                fields=["calendar", "number"], name="scheduling_one_calendar_revision_number"
            ),
            models.CheckConstraint(
                condition=~models.Q(day_start=models.F("day_end")),
                name="scheduling_calendar_day_not_empty",
            ),
        ]
        verbose_name = _("calendar revision")
        verbose_name_plural = _("calendar revisions")

    def __str__(self) -> str:
        return f"{self.calendar.cluster} r{self.number}"

    def clean(self) -> None:
        super().clean()
        try:
            zoneinfo.ZoneInfo(self.timezone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise ValidationError(
                {
                    "timezone": _("Unknown time zone %(tz)r (an IANA name such as Asia/Shanghai).")
                    % {"tz": self.timezone}
                }
            ) from None
        if self.day_start is not None and self.day_start == self.day_end:
            raise ValidationError({"day_end": _("The day window must not be empty.")})
        _names(self.inference_nodes, "inference_nodes")
        _names(self.inference_accounts, "inference_accounts")
        _names(self.training_partitions, "training_partitions")
        if self.slurm_conf and (not self.slurm_conf.startswith("/") or ".." in self.slurm_conf):
            raise ValidationError({"slurm_conf": _("An absolute path without '..'.")})
        kueue = [self.cluster_queue, self.flavor, self.resource]
        quotas = [self.day_quota, self.night_quota]
        if any(kueue) or any(q is not None for q in quotas):
            if not all(kueue) or any(q is None for q in quotas):
                raise ValidationError(
                    {
                        "cluster_queue": _(
                            "A Kueue window needs the ClusterQueue, flavor, resource "
                            "and both quotas."
                        )
                    }
                )
        elif not self.inference_partition:
            raise ValidationError(
                {
                    "inference_partition": _(
                        "Name the inference partition (Slurm) or the "
                        "ClusterQueue and its quotas (Kueue)."
                    )
                }
            )
        if self.inference_partition and not self.inference_accounts:
            raise ValidationError(
                {
                    "inference_accounts": _(
                        "Slurm admits no one into a reservation without "
                        "accounts: name the inference accounts."
                    )
                }
            )


class CalendarApplication(models.Model):
    """One application of a revision to the scheduler: each step with what the portal asked
    and what the scheduler answered when read back (``steps``: ``[{"kind": "reservation" |
    "defer" | "quota", "target": …, "asked": {…}, "confirmed": {…} | null, "ok": bool,
    "error": str}]``). ``outcome`` is confirmed only when every step was read back as
    asked."""

    class Outcome(models.TextChoices):
        RUNNING = "running", _("running")
        CONFIRMED = "confirmed", _("confirmed")
        PARTIAL = "partial", _("partly confirmed")
        REFUSED = "refused", _("refused by the scheduler (nothing changed)")
        FAILED = "failed", _("failed")

    revision = models.ForeignKey(
        CalendarRevision, on_delete=models.PROTECT, related_name="applications"
    )
    applied_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+", null=True
    )
    started_at = models.DateTimeField(_("started"), auto_now_add=True)
    finished_at = models.DateTimeField(_("finished"), null=True, blank=True)
    outcome = models.CharField(
        _("outcome"), max_length=20, choices=Outcome.choices, default=Outcome.RUNNING
    )
    message = models.TextField(_("message"), blank=True)
    steps = models.JSONField(_("steps"), default=list, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]
        verbose_name = _("calendar application")
        verbose_name_plural = _("calendar applications")

    def __str__(self) -> str:
        return f"{self.revision} {self.outcome}"


class CalendarAuditImmutable(Exception):
    """Raised when code tries to change or delete a calendar audit row."""


class CalendarAuditEntry(models.Model):
    """Who did what to a calendar (request, approve, reject, apply, and each refusal), from
    where and why. Rows are only inserted: ``save`` refuses updates, ``delete`` deletion."""

    at = models.DateTimeField(_("when"), auto_now_add=True, db_index=True)
    calendar = models.ForeignKey(
        WindowCalendar, on_delete=models.PROTECT, related_name="audit_entries"
    )
    revision = models.PositiveIntegerField(_("revision"), null=True, blank=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+", null=True
    )
    actor_label = models.CharField(_("who"), max_length=200)
    action = models.CharField(_("action"), max_length=40)
    reason = models.TextField(_("reason"), blank=True)
    source_ip = models.GenericIPAddressField(_("source IP"), null=True, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        verbose_name = _("calendar audit entry")
        verbose_name_plural = _("calendar audit entries")

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_label} {self.action}"

    def save(self, *args, **kwargs) -> None:
        if self.pk is not None:
            raise CalendarAuditImmutable("calendar audit entries are append-only")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise CalendarAuditImmutable("calendar audit entries are append-only")
