"""The day/night window calendar pages (staff): every cluster's calendar, one cluster's with
its revisions, applications (asked vs confirmed) and audit, and the four commands as forms.
The commands are the services' (role, four eyes, revision and audit checked there)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST
from rest_framework.exceptions import APIException

from accounts.access import staff_page
from accounts.services.actor import Actor
from inventory.models import Cluster
from scheduling.api.calendar import COMMANDS
from scheduling.selectors.calendar import calendar_view, calendars_overview
from scheduling.services.calendar import (
    calendar_apply,
    calendar_approve,
    calendar_reject,
    calendar_request,
)


class NamesField(forms.CharField):
    """Comma- or space-separated names → a list (the model validates each name)."""

    def to_python(self, value):
        text = super().to_python(value) or ""
        return [name for name in text.replace(",", " ").split() if name]


class CalendarRequestForm(forms.Form):
    """A proposed revision; the model validates it (one place) when the service saves it."""

    timezone = forms.CharField(label=gettext_lazy("Time zone"), initial="UTC", max_length=60)
    day_start = forms.TimeField(label=gettext_lazy("Day starts (local)"))
    day_end = forms.TimeField(label=gettext_lazy("Day ends (local)"))
    inference_partition = forms.CharField(
        label=gettext_lazy("Inference partition (Slurm)"), required=False, max_length=100
    )
    inference_nodes = NamesField(
        label=gettext_lazy("Inference nodes (empty: the partition's)"), required=False
    )
    inference_accounts = NamesField(label=gettext_lazy("Inference accounts"), required=False)
    training_partitions = NamesField(
        label=gettext_lazy("Training partitions deferred to the night"), required=False
    )
    defer_min_cards = forms.IntegerField(
        label=gettext_lazy("Defer jobs asking at least (cards)"), min_value=0, initial=1
    )
    slurm_conf = forms.CharField(
        label=gettext_lazy("slurm.conf for scontrol"), required=False, max_length=500
    )
    cluster_queue = forms.CharField(
        label=gettext_lazy("Kueue ClusterQueue"), required=False, max_length=253
    )
    flavor = forms.CharField(label=gettext_lazy("Resource flavor"), required=False)
    resource = forms.CharField(label=gettext_lazy("Resource"), required=False)
    day_quota = forms.IntegerField(label=gettext_lazy("Day quota"), required=False, min_value=0)
    night_quota = forms.IntegerField(label=gettext_lazy("Night quota"), required=False, min_value=0)
    reason = forms.CharField(label=gettext_lazy("Reason"), required=False, widget=forms.Textarea)


@staff_page
def calendar_list_page(request: HttpRequest) -> HttpResponse:
    return render(request, "scheduling/calendars.html", {"calendars": calendars_overview()})


# The what-if's figures as shown: (key, label, scale, unit).
WHATIF_FIGURES = (
    ("utilization_allocated_mean", gettext_lazy("Cards allocated (mean)"), 100, "%"),
    ("utilization_busy_mean", gettext_lazy("Cards busy (mean)"), 100, "%"),
    ("queue_wait_h_mean", gettext_lazy("Training queue wait (mean of started jobs)"), 1, "h"),
    ("slo_attainment", gettext_lazy("Inference SLO attainment"), 100, "%"),
    ("core_slo_attainment", gettext_lazy("Core inference SLO attainment"), 100, "%"),
    ("completed_jobs", gettext_lazy("Training jobs completed"), 1, ""),
)


def _fmt(value, scale: float, signed: bool = False) -> str:
    if value is None:
        return "—"
    return f"{value * scale:+.2f}" if signed else f"{value * scale:.2f}"


def whatif_rows(whatif: dict | None) -> list[dict]:
    """The stored what-if as table rows: current, proposed, difference and its interval."""
    result = (whatif or {}).get("result") or {}
    rows = []
    for key, label, scale, unit in WHATIF_FIGURES:
        diff = (result.get("difference") or {}).get(key)
        if diff is None:
            continue
        rows.append(
            {
                "label": label,
                "unit": unit,
                "current": _fmt(result["current"].get(key), scale),
                "proposed": _fmt(result["proposed"].get(key), scale),
                "difference": _fmt(diff["mean"], scale, signed=True),
                "low": _fmt(diff["ci95_low"], scale, signed=True),
                "high": _fmt(diff["ci95_high"], scale, signed=True),
            }
        )
    return rows


def _page(request: HttpRequest, cluster: Cluster, *, form=None, status: int = 200):
    view = calendar_view(cluster)
    newest = view.newest
    if form is None:
        initial = {}
        if newest is not None:
            initial = {name: getattr(newest, name) for name in CalendarRequestForm.base_fields}
            for name in ("inference_nodes", "inference_accounts", "training_partitions"):
                initial[name] = " ".join(initial[name])
            initial["reason"] = ""
        form = CalendarRequestForm(initial=initial)
    context = {
        "view": view,
        "form": form,
        "can_operate": request.user.has_perm("monitoring.operate_cluster"),
        "can_approve": request.user.has_perm("monitoring.approve_migrations"),
        "whatif": (newest.whatif or {}) if newest else {},
        "whatif_rows": whatif_rows(newest.whatif) if newest else [],
    }
    return render(request, "scheduling/calendar.html", context, status=status)


@staff_page
def calendar_page(request: HttpRequest, pk: int) -> HttpResponse:
    """One cluster's calendar: applied and newest revision, applications, audit, forms."""
    return _page(request, get_object_or_404(Cluster, pk=pk))


@staff_page
@require_POST
def calendar_command(request: HttpRequest, pk: int, command: str) -> HttpResponse:
    """One command as a form post; a refusal re-renders the page with its status (403, 409),
    a bad calendar with the form's errors (400), nothing written."""
    if command not in COMMANDS:
        raise Http404(_("No such calendar command."))
    cluster = get_object_or_404(Cluster, pk=pk)
    actor = Actor.from_request(request)
    form = None
    try:
        if command == "request":
            form = CalendarRequestForm(request.POST)
            if not form.is_valid():
                return _page(request, cluster, form=form, status=400)
            revision = calendar_request(cluster=cluster, actor=actor, **form.cleaned_data)
            messages.success(request, _("Revision %(n)s proposed.") % {"n": revision.number})
            return redirect("scheduler-calendar", pk=cluster.pk)
        try:
            number = int(request.POST.get("revision", ""))
        except ValueError:
            messages.error(request, _("The revision decided on is missing."))
            return _page(request, cluster, status=400)
        note = (request.POST.get("note") or "")[:2000]
        if command == "apply":
            application = calendar_apply(cluster=cluster, actor=actor, expected_revision=number)
            messages.info(
                request,
                _("Application of revision %(n)s: %(outcome)s. %(message)s")
                % {
                    "n": number,
                    "outcome": application.get_outcome_display(),
                    "message": application.message,
                },
            )
        else:
            decide = calendar_approve if command == "approve" else calendar_reject
            decide(cluster=cluster, actor=actor, expected_revision=number, note=note)
            messages.success(request, _("Revision %(n)s decided.") % {"n": number})
    except ValidationError as exc:
        if form is not None and hasattr(exc, "error_dict"):
            for field, problems in exc.message_dict.items():
                form.add_error(field if field in form.fields else None, problems)
        else:
            messages.error(request, "; ".join(exc.messages))
        return _page(request, cluster, form=form, status=400)
    except APIException as exc:
        messages.error(request, str(exc.detail))
        return _page(request, cluster, form=form, status=exc.status_code)
    return redirect("scheduler-calendar", pk=cluster.pk)
