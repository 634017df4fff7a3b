"""Twin control page: see every run's two tick kinds, create runs, start/pause/reset/speed."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from accounts.access import staff_page
from simulation.forms import TwinRunCreateForm, TwinRunSpeedForm
from simulation.models import TwinRun
from simulation.selectors import run_statuses
from simulation.services import twin_run_control
from simulation.services import twin_run_new as run_new_create

operator_action = permission_required("monitoring.operate_cluster", raise_exception=True)


@staff_page
def twin_runs(request: HttpRequest) -> HttpResponse:
    form = TwinRunCreateForm()
    return render(request, "simulation/twin.html", {"statuses": run_statuses(), "form": form})


@require_POST
@login_required
@operator_action
def twin_run_new(request: HttpRequest) -> HttpResponse:
    form = TwinRunCreateForm(request.POST)
    if not form.is_valid():
        return render(
            request, "simulation/twin.html", {"statuses": run_statuses(), "form": form}, status=400
        )
    data = form.cleaned_data
    run_new_create(
        name=data["name"],
        policy=data["policy"],
        scenario=data["scenario"],
        description=_("Simulated by the digital twin"),
        tenant=data["tenant"],
        default_for_pages=data["default_for_pages"],
    )
    messages.success(request, _("Twin run %(name)s created and running.") % {"name": data["name"]})
    return redirect("twin")


@require_POST
@login_required
@operator_action
def twin_run_action(request: HttpRequest, pk: int, action: str) -> HttpResponse:
    run = get_object_or_404(TwinRun, pk=pk)
    steps = None
    if action == "speed":
        form = TwinRunSpeedForm(request.POST)
        if not form.is_valid():
            messages.error(request, "; ".join(e for errs in form.errors.values() for e in errs))
            return redirect("twin")
        steps = form.cleaned_data["steps_per_tick"]
    if action not in ("start", "pause", "reset", "speed"):
        return HttpResponse(_("Unknown action."), status=400)
    twin_run_control(run_id=run.pk, action=action, steps_per_tick=steps)
    messages.success(
        request, _("%(name)s: %(action)s done.") % {"name": run.name, "action": action}
    )
    return redirect("twin")
