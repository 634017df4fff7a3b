"""Admin for plans, criteria, gates (approve/reject action), webhooks and the read-only audit.

State never changes through admin forms: plans are edited only while drafts, gates are
decided through the workflow services (the same ones the UI and the API call), and audit
rows and delivery logs cannot be added, changed or deleted.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ActionForm
from django.core.exceptions import PermissionDenied
from django.db.models import Exists, OuterRef
from django.shortcuts import redirect
from django.urls import path, reverse
from django.utils.formats import date_format, number_format
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy
from rest_framework.exceptions import ValidationError

from cluster_portal.web.throttling import page_throttle_wait
from rollout import router_admin, webhook_admin  # noqa: F401 - register their admins
from rollout.api.serializers import command_input, command_input_problem
from rollout.models import (
    AnalysisRun,
    Approval,
    AuditEntry,
    Criterion,
    DeniedAttemptCount,
    Gate,
    GateState,
    MigrationPlan,
    Phase,
    PlanState,
    PlanWorkload,
    WebhookDelivery,
)
from rollout.selectors import gate_choices
from rollout.services.audit import Actor, audit_record
from rollout.services.commands import plan_command
from rollout.services.criteria import (
    criterion_delete,
    criterion_save,
    criterion_save_check,
    phase_manual_gate_set,
)
from rollout.services.errors import FourEyesViolation, NotPermitted, WorkflowConflict
from rollout.services.plans import phases_create_default, phases_without_gate
from rollout.services.routing import router_choose


def _table(headers, rows) -> str:
    """A small read-only HTML table for the admin's detail pages (escaped)."""
    if not rows:
        return ""
    head = format_html_join("", "<th>{}</th>", ((h,) for h in headers))
    body = format_html_join(
        "",
        "<tr>{}</tr>",
        ((format_html_join("", "<td>{}</td>", ((c,) for c in row)),) for row in rows),
    )
    return format_html("<table><thead><tr>{}</tr></thead><tbody>{}</tbody></table>", head, body)


class _ReadOnly(admin.ModelAdmin):
    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class PlanWorkloadInline(admin.TabularInline):
    model = PlanWorkload
    fields = ("workload", "phase", "router", "share", "confirmed_share", "stable_share")
    readonly_fields = ("router", "share", "confirmed_share", "stable_share")
    extra = 1


class PhaseInline(admin.TabularInline):
    model = Phase
    fields = ("kind", "planned_start", "planned_end", "actual_start", "actual_end", "manual_gate")
    # A manual gate is chosen through the audited action, never a silent form edit.
    readonly_fields = ("kind", "actual_start", "actual_end", "manual_gate")
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(MigrationPlan)
class MigrationPlanAdmin(admin.ModelAdmin):
    list_display = ("name", "tenant", "state", "current_phase", "gray_step_index", "updated_at")
    list_filter = ("state", "tenant")
    fields = (
        "tenant",
        "name",
        "source_cluster",
        "target_cluster",
        "gray_steps",
        "required_approvals",
        "router",
        "state",
        "current_phase",
        "version",
    )
    readonly_fields = ("state", "current_phase", "version")
    inlines = [PhaseInline, PlanWorkloadInline]
    actions = ["make_manual_gates"]

    @admin.action(description=_("Make phases without criteria manual gates (reason required)"))
    def make_manual_gates(self, request, queryset) -> None:
        try:
            reason = command_input("manual-gate", {"reason": request.POST.get("comment", "")})[
                "reason"
            ]
        except ValidationError as exc:
            self.message_user(request, command_input_problem(exc), messages.ERROR)
            return
        actor = Actor.from_request(request)
        for plan in queryset:
            for kind in phases_without_gate(plan):
                try:
                    phase_manual_gate_set(
                        phase=plan.phases.get(kind=kind), manual=True, actor=actor, reason=reason
                    )
                except (NotPermitted, WorkflowConflict) as exc:
                    self.message_user(request, f"{plan}: {exc}", messages.ERROR)
                else:
                    self.message_user(request, f"{plan} · {kind}: {_('manual gate')}")

    def has_change_permission(self, request, obj=None) -> bool:
        # Only drafts are edited here; a started plan moves through its commands.
        ok = super().has_change_permission(request, obj)
        return ok and (obj is None or obj.state == PlanState.DRAFT)

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def save_model(self, request, obj, form, change) -> None:
        if not change:
            obj.created_by = request.user
        changed = "router" in form.changed_data
        chosen = obj.router
        if changed:
            # The router changes through the one service (audited, checked), not the form.
            obj.router = MigrationPlan.objects.get(pk=obj.pk).router if change else None
        super().save_model(request, obj, form, change)
        actor = Actor.from_request(request)
        if not change:
            phases_create_default(plan=obj)
            audit_record(actor=actor, action="create", plan=obj, to_state=obj.state)
        if changed:
            router_choose(plan_id=obj.pk, router=chosen, actor=actor)
            obj.refresh_from_db()


class CriterionAdminForm(forms.ModelForm):
    """The admin's criterion form: the service's guards run as form validation, so an edit
    that would strip a started gate (its last decisive criterion moved away or made a dry
    run) shows the refusal on the form instead of failing in ``save_model``."""

    class Meta:
        model = Criterion
        fields = [
            "phase",
            "name",
            "metric",
            "entity_kind",
            "entity_key",
            "aggregation",
            "comparator",
            "threshold",
            "window_seconds",
            "compare_to_baseline",
            "dry_run",
            "count",
            "interval_seconds",
            "initial_delay_seconds",
            "min_samples",
            "failure_limit",
            "inconclusive_limit",
            "consecutive_error_limit",
            "error_retry_seconds",
            "trusted_sources",
        ]

    def _update_errors(self, errors) -> None:
        # The model's clean() may name a field this form does not show (``workload``: moving a
        # criterion to another tenant's plan): Django raises ValueError (a 500) for those, so
        # they are shown at the top of the form instead, naming the field.
        from django.core.exceptions import NON_FIELD_ERRORS, ValidationError

        if hasattr(errors, "error_dict"):
            shown, hidden = {}, []
            for field, messages_ in errors.error_dict.items():
                if field in self.fields or field == NON_FIELD_ERRORS:
                    shown[field] = messages_
                else:
                    hidden += [f"{field}: {m}" for e in messages_ for m in e.messages]
            if hidden:
                shown.setdefault(NON_FIELD_ERRORS, []).extend(ValidationError(hidden).error_list)
            errors = ValidationError(shown)
        super()._update_errors(errors)

    def _post_clean(self) -> None:
        super()._post_clean()  # the instance now carries the submitted phase and dry-run flag
        if self.errors or self.instance.phase_id is None:
            return
        try:
            criterion_save_check(criterion=self.instance)
        except WorkflowConflict as exc:
            self.add_error(None, str(exc))


@admin.register(Criterion)
class CriterionAdmin(admin.ModelAdmin):
    form = CriterionAdminForm
    list_display = ("name", "phase", "metric", "aggregation", "comparator", "threshold", "dry_run")
    list_filter = ("phase__kind", "dry_run")

    def save_model(self, request, obj, form, change) -> None:
        # Through the service: editing criteria moves an open gate to a new revision.
        criterion_save(criterion=obj, actor=Actor.from_request(request))

    def delete_model(self, request, obj) -> None:
        # Deleting is a change of what approvers approve too: new revision + audit row.
        try:
            criterion_delete(criterion=obj, actor=Actor.from_request(request))
        except (NotPermitted, WorkflowConflict) as exc:
            self.message_user(request, f"{obj}: {exc}", messages.ERROR)

    def delete_queryset(self, request, queryset) -> None:
        for criterion in queryset:
            self.delete_model(request, criterion)


class DecisionForm(ActionForm):
    comment = forms.CharField(
        label=_("Comment / reason"), required=False, widget=forms.TextInput(attrs={"size": 40})
    )


MigrationPlanAdmin.action_form = DecisionForm


class AwaitingMyApprovalFilter(admin.SimpleListFilter):
    """Gates waiting for a decision the signed-in approver may still make: not requested by
    them (four-eyes) and not yet decided by them at the current revision."""

    title = _("awaiting my approval")
    parameter_name = "mine"

    def lookups(self, request, model_admin):
        return (("yes", _("awaiting my approval")),)

    def queryset(self, request, queryset):
        if self.value() != "yes":
            return queryset
        mine = Approval.objects.filter(
            gate=OuterRef("pk"), revision=OuterRef("revision"), user=request.user
        )
        return (
            queryset.filter(state=GateState.AWAITING_APPROVAL)
            .exclude(requested_by=request.user)
            .exclude(Exists(mine))
        )


@admin.register(Gate)
class GateAdmin(_ReadOnly):
    """The approvals desk: a gate's revision, criteria, measured values, analysis history and
    audit trail, with Approve / Reject (reason) that post the plan version and gate revision
    the approver is looking at to the same service as the pages and the API."""

    list_display = ("plan", "label", "state", "revision", "requested_by", "requested_at")
    list_filter = (AwaitingMyApprovalFilter, "state")
    change_form_template = "admin/rollout/gate/change_form.html"

    fields = (
        "plan",
        "phase",
        "gray_step",
        "state",
        "revision",
        "requested_by",
        "requested_at",
        "decided_at",
        "criteria_shown",
        "approvals_shown",
        "analysis_history",
        "audit_trail",
    )
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("plan", "phase", "requested_by")

    @admin.display(description=_("gray step"))
    def gray_step(self, gate: Gate) -> str:
        """The step's traffic share ("5%"), not its index in the plan's steps."""
        if gate.phase.kind != "gray":
            return "—"
        return f"{gate.plan.gray_steps[gate.step_index]}%"

    @admin.display(description=_("criteria"))
    def criteria_shown(self, gate: Gate) -> str:
        rows = [
            (c.name, c.describe(), _("dry run") if c.dry_run else "")
            for c in gate.phase.criteria.all()
        ]
        return _table((_("name"), _("condition"), ""), rows) or _("none: this gate cannot start")

    @admin.display(description=_("approvals of this revision"))
    def approvals_shown(self, gate: Gate) -> str:
        rows = [
            (
                a.principal,
                a.get_decision_display(),
                a.comment,
                date_format(a.created_at, "DATETIME_FORMAT"),
            )
            for a in gate.approvals.filter(revision=gate.revision)
        ]
        choices = gate_choices(gate, None)
        summary = _("approved %(n)s of %(required)s") % {
            "n": choices["approved"],
            "required": choices["required"],
        }
        table = _table((_("approver"), _("decision"), _("comment"), _("at")), rows)
        return format_html("<p>{}</p>{}", summary, table) if table else summary

    @admin.display(description=_("analysis history (measured values)"))
    def analysis_history(self, gate: Gate) -> str:
        rows = []
        for run in gate.runs.prefetch_related("metrics__measurements"):
            for metric in run.metrics.all():
                for m in metric.measurements.all():
                    rows.append(
                        (
                            f"r{run.gate_revision} · {run.get_status_display()}",
                            metric.name,
                            f"#{m.seq}",
                            m.get_outcome_display(),
                            "—" if m.value is None else number_format(m.value, 4),
                            "—" if m.threshold is None else number_format(m.threshold, 4),
                            m.samples,
                            m.reason_display,
                            date_format(m.taken_at, "DATETIME_FORMAT"),
                        )
                    )
        headers = (
            _("run"),
            _("criterion"),
            _("number"),
            _("outcome"),
            _("value"),
            _("threshold"),
            _("values in window"),
            _("why"),
            _("taken at"),
        )
        return _table(headers, rows) or _("no measurement yet")

    @admin.display(description=_("audit trail"))
    def audit_trail(self, gate: Gate) -> str:
        rows = [
            (
                date_format(e.at, "DATETIME_FORMAT"),
                e.actor_display,
                e.action_display,
                f"{e.from_state_display} → {e.to_state_display}",
                e.reason_display,
            )
            for e in AuditEntry.objects.filter(plan_id=gate.plan_id).order_by("-at", "-id")[:100]
        ]
        return _table((_("at"), _("who"), _("action"), _("state"), _("why")), rows) or "—"

    def has_view_permission(self, request, obj=None) -> bool:
        return request.user.has_perm(
            "monitoring.approve_migrations"
        ) or super().has_view_permission(request, obj)

    def get_urls(self):
        decide = path(
            "<int:object_id>/decide/",
            self.admin_site.admin_view(self.decide_view),
            name="rollout_gate_decide",
        )
        return [decide, *super().get_urls()]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        gate = self.get_object(request, object_id)
        context = dict(extra_context or {})
        if gate is not None and gate.state == GateState.AWAITING_APPROVAL:
            context["decision"] = {
                "gate": gate,
                "version": gate.plan.version,
                "can_decide": Actor.from_request(request).can_approve(),
                # Only what this approver may still do (no Approve for the requester or
                # for someone who already decided this revision).
                "choices": gate_choices(gate, request.user),
            }
        return super().change_view(request, object_id, form_url, extra_context=context)

    def decide_view(self, request, object_id: int):
        """Approve or reject what the approver saw: the posted revision and plan version go to
        ``plan_command`` unchanged, so a criterion edited in between is a conflict, never an
        approval of something unseen."""
        gate = self.get_object(request, str(object_id))
        if gate is None or not self.has_view_permission(request, gate):
            raise PermissionDenied
        back = redirect(reverse("admin:rollout_gate_change", args=[gate.pk]))
        if request.method != "POST":
            return back
        command = request.POST.get("command", "")
        if command not in ("approve", "reject"):
            self.message_user(request, _("Choose Approve or Reject."), messages.ERROR)
            return back
        if page_throttle_wait(request, "approve") is not None:
            self.message_user(request, _("Too many commands; wait a minute."), messages.ERROR)
            return back
        if not request.POST.get("revision") or not request.POST.get("expected_version"):
            self.message_user(
                request, _("The form did not say which revision you saw."), messages.ERROR
            )
            return back
        try:
            # The API's input contract: lengths, NUL characters, revision and version.
            body = command_input(
                command,
                {
                    "reason": request.POST.get("reason", ""),
                    "revision": request.POST.get("revision", ""),
                    "expected_version": request.POST.get("expected_version", ""),
                },
            )
        except ValidationError as exc:
            self.message_user(request, command_input_problem(exc), messages.ERROR)
            return back
        try:
            plan_command(
                command=command,
                plan_id=gate.plan_id,
                actor=Actor.from_request(request),
                reason=body["reason"],
                revision=body["revision"],
                expected_version=body["expected_version"],
            )
        except (FourEyesViolation, NotPermitted, WorkflowConflict) as exc:
            self.message_user(request, f"{gate}: {exc}", messages.ERROR)
        else:
            done = _("rejected")
            if command == "approve":
                gate.refresh_from_db()
                choices = gate_choices(gate, request.user)
                done = _("approved %(n)s of %(required)s") % {
                    "n": choices["approved"],
                    "required": choices["required"],
                }
            self.message_user(request, f"{gate}: {done}", messages.SUCCESS)
        return back


@admin.register(DeniedAttemptCount)
class DeniedAttemptCountAdmin(_ReadOnly):
    """Refusals of principals without any workflow role, counted per hour instead of audited
    one by one (the first of each hour is in the audit trail)."""

    list_display = ("hour", "plan", "action", "principal", "count", "last_at")
    list_filter = ("action",)


@admin.register(AnalysisRun)
class AnalysisRunAdmin(_ReadOnly):
    list_display = ("gate", "gate_revision", "status", "message_shown", "traffic_at", "started_at")
    list_filter = ("status",)
    fields = (
        "gate",
        "gate_revision",
        "status",
        "message_shown",
        "traffic_at",
        "started_at",
        "finished_at",
    )
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("gate__plan", "gate__phase")

    @admin.display(description=_("message"))
    def message_shown(self, run: AnalysisRun) -> str:
        return run.message_display


@admin.register(AuditEntry)
class AuditEntryAdmin(_ReadOnly):
    # Labels in the reader's language; filtering and search still work on the stored codes.
    list_display = ("at", "who", "what", "plan", "from_shown", "to_shown", "source_ip")
    list_filter = ("action",)
    search_fields = ("actor_label", "reason")

    @admin.display(description=_("who"), ordering="actor_label")
    def who(self, entry: AuditEntry) -> str:
        return entry.actor_display

    @admin.display(description=_("action"), ordering="action")
    def what(self, entry: AuditEntry) -> str:
        return entry.action_display

    @admin.display(description=_("from"))
    def from_shown(self, entry: AuditEntry) -> str:
        return entry.from_state_display

    @admin.display(description=pgettext_lazy("state change", "to"))
    def to_shown(self, entry: AuditEntry) -> str:
        return entry.to_state_display


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(_ReadOnly):
    list_display = ("created_at", "subscription", "event", "status", "attempts", "last_status_code")
    list_filter = ("status", "event")
