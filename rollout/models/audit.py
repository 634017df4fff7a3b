"""The append-only audit trail of the migration workflow."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from rollout.labels import action_label, actor_label, object_type_label, reason_text, state_label
from rollout.models.analysis import Outcome
from rollout.models.gates import GateState
from rollout.models.plans import PhaseKind, PlanState


class AuditImmutable(Exception):
    """Raised when code tries to change or delete an audit row."""


class AuditEntry(models.Model):
    """Who did what to which object, from where, why, and the state before and after.

    Rows are only ever inserted: ``save`` refuses updates and ``delete`` refuses deletion
    (the admin and the API offer neither). Denied attempts are recorded too. The database
    enforces the same with triggers (migration 0002, ``rollout/db_guard.py``): a queryset
    ``update()``/``delete()`` or raw SQL fails with an IntegrityError. A plan or user with
    audit rows therefore cannot be deleted (PROTECT): nulling the reference would be an update.
    A future migration that rebuilds this table on SQLite must re-create those triggers.
    """

    at = models.DateTimeField(_("when"), auto_now_add=True, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("user"),
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    actor_label = models.CharField(_("who"), max_length=200)
    action = models.CharField(_("action"), max_length=40, db_index=True)
    object_type = models.CharField(_("object type"), max_length=40)
    object_id = models.PositiveBigIntegerField(_("object id"), null=True, blank=True)
    plan = models.ForeignKey(
        "rollout.MigrationPlan",
        verbose_name=_("plan"),
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="audit_entries",
    )
    from_state = models.CharField(_("from"), max_length=40, blank=True)
    to_state = models.CharField(_("to"), max_length=40, blank=True)
    reason = models.TextField(_("reason"), blank=True)
    # A reason the workflow wrote, as a code and parameters (rollout/labels.py), translated
    # when shown; null for reasons people typed. Nullable without a default so that adding it
    # is a plain ADD COLUMN on SQLite too (a table rebuild would drop the append-only triggers).
    reason_data = models.JSONField(_("reason code"), null=True, blank=True, editable=False)
    source_ip = models.GenericIPAddressField(_("source IP"), null=True, blank=True)
    # The phase the row touches (its gate's or phase's, else the plan's at the time) and, in
    # gray, the traffic step. Null on rows from before these columns, and on rows that touch no
    # phase (a draft plan's creation). Nullable without defaults: a plain ADD COLUMN (above).
    phase = models.CharField(
        _("phase"), max_length=10, choices=PhaseKind.choices, null=True, blank=True
    )
    gray_step_percent = models.PositiveSmallIntegerField(_("gray step (%)"), null=True, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        verbose_name = _("audit entry")
        verbose_name_plural = _("audit entries")

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_label} {self.action}"

    def save(self, *args, **kwargs) -> None:
        if self.pk is not None:
            raise AuditImmutable("audit entries are append-only")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AuditImmutable("audit entries are append-only")

    # Labels for people; the stored codes stay the machine interface (API, CSV, filters).
    @property
    def phase_display(self) -> str:
        """ "pilot", "gray 25%", "full"; empty when the row touches no phase."""
        if not self.phase:
            return ""
        label = str(PhaseKind(self.phase).label)
        if self.gray_step_percent is not None:
            return f"{label} {self.gray_step_percent}%"
        return label

    @property
    def action_display(self) -> str:
        return action_label(self.action)

    @property
    def object_type_display(self) -> str:
        return object_type_label(self.object_type)

    @property
    def from_state_display(self) -> str:
        return state_label(self.from_state, *self._state_vocabularies())

    @property
    def to_state_display(self) -> str:
        return state_label(self.to_state, *self._state_vocabularies())

    @property
    def actor_display(self) -> str:
        return actor_label(self.actor_label)

    @property
    def reason_display(self) -> str:
        return reason_text(self.reason_data, self.reason, outcomes=dict(Outcome.choices))

    def _state_vocabularies(self) -> tuple[dict, dict]:
        # A gate's row speaks of gate states first ("passed" is the analysis verdict).
        gate, plan = dict(GateState.choices), dict(PlanState.choices)
        return (gate, plan) if self.object_type == "gate" else (plan, gate)
