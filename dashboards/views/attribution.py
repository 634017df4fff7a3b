"""A workload's attribution on its page: its series selector, what it bound, and the
operators' form to change it (the same service as the API and the admin)."""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from accounts.access import operator_page
from dashboards.selectors.workloads import workloads_visible_to
from inventory.models import Workload
from inventory.services import workload_selector_set
from telemetry.read import attribution_bound_intervals

WINDOW = timedelta(hours=24)


class SeriesSelectorForm(forms.Form):
    series_selector = forms.CharField(
        label=gettext_lazy("Series selector"),
        required=False,
        max_length=500,
        help_text=Workload._meta.get_field("series_selector").help_text,
        widget=forms.TextInput(attrs={"size": 60}),
    )


def attribution_context(request: HttpRequest, workload: Workload) -> dict:
    """What the workload page shows about attribution (any viewer of the workload)."""
    end = timezone.now()
    bound, total = [], 0
    if workload.series_selector:
        bound, total = attribution_bound_intervals(
            cluster_id=workload.cluster_id,
            selector=workload.series_selector,
            start=end - WINDOW,
            end=end,
        )
    return {
        "attribution_bound": bound,
        "attribution_total": total,
        "attribution_card_hours": sum(b.card_seconds for b in bound) / 3600.0,
        "selector_form": SeriesSelectorForm(initial={"series_selector": workload.series_selector})
        if request.user.has_perm("monitoring.operate_cluster")
        else None,
    }


@require_POST
@operator_page
def workload_selector_save(request: HttpRequest, pk: int) -> HttpResponse:
    workload = workloads_visible_to(request.user).filter(pk=pk).first()
    if workload is None:
        raise Http404("no such workload")
    form = SeriesSelectorForm(request.POST)
    if form.is_valid():
        try:
            workload_selector_set(
                workload_id=workload.pk, selector=form.cleaned_data["series_selector"]
            )
        except ValidationError as exc:
            for message in exc.message_dict.get("series_selector", exc.messages):
                form.add_error("series_selector", message)
    if not form.is_valid():
        return render(
            request,
            "dashboards/workload_selector_error.html",
            {"workload": workload, "selector_form": form},
            status=400,
        )
    messages.success(request, _("Series selector saved."))
    return redirect("workload-detail", pk=workload.pk)
