"""A workload's serving bindings on its page: the list (any viewer of the workload) and the
operators' forms to add and remove one (the same service as the API and the admin)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from accounts.access import operator_page
from dashboards.selectors.workloads import workloads_visible_to
from inventory.models import Workload
from telemetry.catalogue.serving_bindings import serving_binding_create, serving_binding_delete
from telemetry.catalogue.vouching import author_id_of
from telemetry.models import ServingBinding


class ServingBindingForm(forms.Form):
    model_name = forms.CharField(
        label=gettext_lazy("Model name"),
        max_length=200,
        help_text=gettext_lazy("The engine's model_name label, e.g. meta-llama/Llama-3.1-8B."),
    )
    instance = forms.CharField(
        label=gettext_lazy("Instance or pod"),
        max_length=200,
        required=False,
        help_text=ServingBinding._meta.get_field("instance").help_text,
    )


def serving_bindings_context(request: HttpRequest, workload: Workload) -> dict:
    """What the workload page shows about its serving endpoints."""
    operator = request.user.has_perm("monitoring.operate_cluster")
    return {
        "serving_bindings": list(workload.serving_bindings.order_by("model_name", "instance")),
        "binding_form": ServingBindingForm() if operator else None,
    }


def _workload(request: HttpRequest, pk: int) -> Workload:
    workload = workloads_visible_to(request.user).filter(pk=pk).first()
    if workload is None:
        raise Http404("no such workload")
    return workload


@require_POST
@operator_page
def serving_binding_add(request: HttpRequest, pk: int) -> HttpResponse:
    workload = _workload(request, pk)
    form = ServingBindingForm(request.POST)
    if form.is_valid():
        try:
            serving_binding_create(
                workload_id=workload.pk,
                model_name=form.cleaned_data["model_name"],
                instance=form.cleaned_data["instance"],
                created_by_id=author_id_of(request.user),
            )
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                for message in errors:
                    form.add_error(field if field in form.fields else None, message)
    if not form.is_valid():
        return render(
            request,
            "dashboards/serving_binding_error.html",
            {"workload": workload, "binding_form": form},
            status=400,
        )
    messages.success(request, _("Serving binding added."))
    return redirect("workload-detail", pk=workload.pk)


@require_POST
@operator_page
def serving_binding_remove(request: HttpRequest, pk: int, binding_pk: int) -> HttpResponse:
    workload = _workload(request, pk)
    binding = get_object_or_404(ServingBinding, pk=binding_pk, workload=workload)
    serving_binding_delete(binding_id=binding.pk)
    messages.success(request, _("Serving binding removed."))
    return redirect("workload-detail", pk=workload.pk)
