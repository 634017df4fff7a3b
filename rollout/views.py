"""Migration pages: plan list, plan detail (timeline, gates, measurements, audit), commands,
the audit trail with CSV export and the webhook delivery log."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST
from rest_framework.exceptions import ValidationError

from accounts.access import operator_page, staff_page
from cluster_portal.web.csv import csv_attachment, csv_writer
from cluster_portal.web.filters import unknown_params
from cluster_portal.web.throttling import page_throttle_wait
from rollout.api.serializers import RouterChoiceSerializer, command_input, command_input_problem
from rollout.forms import PlanAuthorForm, PlanListForm
from rollout.labels import action_label
from rollout.models import AnalysisRun, Approval, TrafficRouter, WebhookDelivery
from rollout.selectors import (
    audit_visible_to,
    gate_choices,
    plan_evidence_writers,
    plan_routing,
    plan_serving,
    plan_timeline,
    plans_visible_to,
    redact_people,
    sees_people,
)
from rollout.selectors_timeline import plan_migration_timeline
from rollout.services.audit import Actor
from rollout.services.authoring import plan_author, plan_manual_empty_phases
from rollout.services.commands import plan_command as plan_command_run
from rollout.services.errors import FourEyesViolation, NotPermitted, WorkflowConflict
from rollout.services.routing import CHOOSABLE_IN, router_choose
from rollout.views_criteria import criteria_context

PAGE_SIZE = 100
CSV_COLUMNS = (
    "id",
    "at",
    "actor",
    "action",
    "object_type",
    "object_id",
    "plan",
    "from_state",
    "to_state",
    "reason",
    "source_ip",
    "phase",
    "gray_step_percent",
)


@operator_page
def plan_new(request: HttpRequest) -> HttpResponse:
    """Author a draft plan with template gate criteria (edited on the plan page, the admin or
    the API). ``?tenant=&source_cluster=&target_cluster=`` (the "List workloads" button)
    narrows the workload lists to that tenant's unfinished workloads on that cluster."""
    # What the author typed before listing the workloads stays filled in.
    chosen = {
        k: v
        for k, v in request.GET.items()
        if k in PlanAuthorForm.base_fields and k not in ("pilot", "gray")
    }
    if request.method == "POST" and "list_workloads" in request.POST:
        # "List workloads" posts (the CSRF token never goes into a URL) and re-renders.
        chosen = {
            k: v
            for k, v in request.POST.items()
            if k in PlanAuthorForm.base_fields and k not in ("pilot", "gray")
        }
        form = PlanAuthorForm(initial=chosen)
        return render(request, "rollout/plan_new.html", {"form": form})
    form = PlanAuthorForm(request.POST or None, initial=chosen)
    if request.method == "POST" and form.is_valid():
        data = dict(form.cleaned_data)
        manual = data.pop("manual_empty_phases", False)
        try:
            plan = plan_author(actor=Actor.from_request(request), **data)
            if manual:
                plan_manual_empty_phases(plan=plan, actor=Actor.from_request(request))
        except DjangoValidationError as exc:
            for field, errors in getattr(exc, "message_dict", {"__all__": exc.messages}).items():
                target = field if field in form.fields else None
                for error in errors:
                    form.add_error(target, error)
        else:
            messages.success(
                request,
                _("Plan %(name)s created as a draft with template criteria.") % {"name": plan.name},
            )
            return redirect("migration-plan", pk=plan.pk)
    return render(request, "rollout/plan_new.html", {"form": form})


@login_required
def plan_list(request: HttpRequest) -> HttpResponse:
    """Plans the reader may see, newest first, :data:`PAGE_SIZE` a page; filtered by state,
    tenant, cluster (either end) and name; an unknown parameter or bad value is a 400 page."""
    form = PlanListForm(request.GET, user=request.user)
    unknown = unknown_params(request.GET, [*form.fields, "page"])
    if unknown or not form.is_valid():
        errors = {key: _("unknown parameter") for key in unknown}
        if not unknown:
            errors = {field: " ".join(messages) for field, messages in form.errors.items()}
        return render(request, "bad_filter.html", {"errors": errors}, status=400)
    plans = form.filter(plans_visible_to(request.user))
    page = Paginator(plans, PAGE_SIZE).get_page(request.GET.get("page"))
    context = {"page": page, "form": form, "page_query": form.query_string()}
    return render(request, "rollout/plan_list.html", context)


@login_required
def plan_detail(request: HttpRequest, pk: int) -> HttpResponse:
    plan = get_object_or_404(plans_visible_to(request.user), pk=pk)
    gates = list(plan.gates.select_related("phase", "requested_by").order_by("-id"))
    runs = (
        AnalysisRun.objects.filter(gate__plan=plan)
        .prefetch_related("metrics__measurements")
        .order_by("-id")
    )
    runs_by_gate: dict[int, list[AnalysisRun]] = {}
    for run in runs:
        runs_by_gate.setdefault(run.gate_id, []).append(run)
    approvals = list(Approval.objects.filter(gate__plan=plan).select_related("user"))
    audit = list(plan.audit_entries.select_related("actor")[:200])
    user = request.user
    redact_people(user, audit=audit, approvals=approvals, gates=gates)
    approvals_by_gate: dict[int, list[Approval]] = {}
    for approval in approvals:
        approvals_by_gate.setdefault(approval.gate_id, []).append(approval)
    current_gate = next((g for g in gates if g.pk == plan.current_gate_id), None)
    context = {
        "plan": plan,
        "timeline": plan_timeline(plan),
        "gates": [
            (
                g,
                list(g.phase.criteria.all()),
                runs_by_gate.get(g.pk, []),
                approvals_by_gate.get(g.pk, []),
            )
            for g in gates
        ],
        "audit": audit,
        "sees_people": sees_people(user),
        "can_operate": user.has_perm("monitoring.operate_cluster"),
        "can_approve": user.has_perm("monitoring.approve_migrations"),
        "can_force": user.has_perm("monitoring.force_promote_migrations"),
        "current_gate": current_gate,
        # Only what this person may still do: no Approve for the requester or for someone
        # who already decided this revision, no break-glass for the requester.
        "choices": gate_choices(current_gate, user),
    }
    context.update(criteria_context(plan, user))
    context["routing"] = plan_routing(plan, staff=user.is_staff)
    context["serving"] = plan_serving(plan, now=timezone.now())
    context["migration_timeline"] = plan_migration_timeline(plan, now=timezone.now())
    context["evidence_writers"] = plan_evidence_writers(plan) if user.is_staff else []
    context["can_choose_router"] = context["can_operate"] and plan.state in CHOOSABLE_IN
    if context["can_choose_router"]:
        context["routers"] = list(TrafficRouter.objects.order_by("name"))
    return render(request, "rollout/plan_detail.html", context)


@login_required
@require_POST
def plan_router(request: HttpRequest, pk: int) -> HttpResponse:
    """The page's router choice: the same service and input contract as the API's."""
    plan = get_object_or_404(plans_visible_to(request.user), pk=pk)
    body = RouterChoiceSerializer(
        data={
            key: value or None
            for key, value in (
                ("router", request.POST.get("router", "")),
                ("workload", request.POST.get("workload", "")),
                ("expected_version", request.POST.get("version", "")),
            )
            if key == "router" or value
        }
    )
    if not body.is_valid():
        why = command_input_problem(ValidationError(body.errors))
        messages.error(request, _("Not done: %(why)s") % {"why": why})
        return redirect("migration-plan", pk=plan.pk)
    data = body.validated_data
    try:
        router_choose(
            plan_id=plan.pk,
            router=data["router"],
            workload_id=data.get("workload"),
            actor=Actor.from_request(request),
            expected_version=data.get("expected_version"),
        )
    except (NotPermitted, WorkflowConflict) as exc:
        messages.error(request, _("Not done: %(why)s") % {"why": exc})
    else:
        messages.success(request, _("Traffic router chosen."))
    return redirect("migration-plan", pk=plan.pk)


def too_many_commands(wait: float) -> HttpResponse:
    """429 for a page's command over the API's budget (nothing was run or audited)."""
    seconds = max(1, round(wait))
    text = _("Too many commands; try again in %(seconds)d s.") % {"seconds": seconds}
    return HttpResponse(
        text, status=429, content_type="text/plain; charset=utf-8", headers={"Retry-After": seconds}
    )


@login_required
@require_POST
def plan_command(request: HttpRequest, pk: int, command: str) -> HttpResponse:
    """The page's buttons: the same service and arguments as the API (plan version and gate
    revision as the page showed them)."""
    plan = get_object_or_404(plans_visible_to(request.user), pk=pk)
    # Throttled and validated exactly as the API is (same budget, same serializer).
    wait = page_throttle_wait(request, "approve")
    if wait is not None:
        return too_many_commands(wait)
    try:
        body = command_input(
            command,
            {
                "reason": request.POST.get("comment", ""),
                "revision": request.POST.get("revision", ""),
                "expected_version": request.POST.get("version", ""),
            },
        )
    except ValidationError as exc:
        messages.error(request, _("Not done: %(why)s") % {"why": command_input_problem(exc)})
        return redirect("migration-plan", pk=plan.pk)
    try:
        plan_command_run(
            command=command,
            plan_id=plan.pk,
            actor=Actor.from_request(request),
            reason=body["reason"],
            revision=body.get("revision"),
            expected_version=body.get("expected_version"),
        )
    except (FourEyesViolation, NotPermitted) as exc:
        messages.error(request, _("Not allowed: %(why)s") % {"why": exc})
        return redirect("migration-plan", pk=plan.pk)
    except WorkflowConflict as exc:
        messages.error(request, _("Not done: %(why)s") % {"why": exc})
        return redirect("migration-plan", pk=plan.pk)
    # The URL's command ("force-promote") read as the audit's action label.
    label = action_label(command.replace("-", "_"))
    messages.success(request, _("Done: %(command)s.") % {"command": label})
    return redirect("migration-plan", pk=plan.pk)


@staff_page
def audit_list(request: HttpRequest) -> HttpResponse:
    """The whole audit trail, newest first; ``?plan=&action=`` filter, ``?format=csv``."""
    entries = audit_visible_to(request.user)
    plan = request.GET.get("plan", "")
    action = request.GET.get("action", "")
    if plan.isdigit():
        entries = entries.filter(plan_id=int(plan))
    if action:
        entries = entries.filter(action=action)
    if request.GET.get("format") == "csv":
        response = csv_attachment("migration-audit")
        writer = csv_writer(response)
        writer.writerow(CSV_COLUMNS)
        for e in entries.iterator(chunk_size=2000):
            writer.writerow(
                [
                    e.pk,
                    e.at.isoformat(),
                    e.actor_label,
                    e.action,
                    e.object_type,
                    e.object_id or "",
                    e.plan_id or "",
                    e.from_state,
                    e.to_state,
                    e.reason,
                    e.source_ip or "",
                    e.phase or "",
                    "" if e.gray_step_percent is None else e.gray_step_percent,
                ]
            )
        return response
    page = Paginator(entries, PAGE_SIZE).get_page(request.GET.get("page"))
    context = {"page": page, "plan": plan, "action": action}
    return render(request, "rollout/audit.html", context)


@operator_page
def webhook_deliveries(request: HttpRequest) -> HttpResponse:
    deliveries = WebhookDelivery.objects.select_related("subscription")
    page = Paginator(deliveries, PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "rollout/webhooks.html", {"page": page})
