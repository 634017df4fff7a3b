"""Gate criteria edited on the plan's page: add, change, delete.

Thin: parse the form, call the same services the admin and the API call (``criterion_save``,
``criterion_delete`` — which move an open gate to a new revision and write the audit row),
and go back to the plan's criteria with what happened. Operators only; a finished plan's
criteria are history and are not edited.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from accounts.access import operator_page
from rollout.forms import CriterionForm
from rollout.models import Criterion, MigrationPlan
from rollout.selectors import plans_visible_to
from rollout.services.audit import Actor
from rollout.services.criteria import criterion_delete, criterion_save
from rollout.services.errors import NotPermitted, WorkflowConflict


def criterion_form_prefix(criterion: Criterion | None) -> str:
    """Each criterion's form on the page has its own field names (and ids)."""
    return f"c{criterion.pk}" if criterion is not None and criterion.pk else "new"


def _back(plan: MigrationPlan) -> HttpResponse:
    return redirect(reverse("migration-plan", args=[plan.pk]) + "#criteria")


def _plan(request: HttpRequest, pk: int) -> MigrationPlan:
    return get_object_or_404(plans_visible_to(request.user), pk=pk)


def _errors(form: CriterionForm) -> str:
    return "; ".join(
        f"{form.fields[f].label if f in form.fields else ''}: {' '.join(e)}".lstrip(": ")
        for f, e in form.errors.items()
    )


def _save(request: HttpRequest, plan: MigrationPlan, criterion: Criterion) -> HttpResponse:
    if plan.is_finished:
        messages.error(request, _("Not done: the plan is finished; its criteria are history."))
        return _back(plan)
    form = CriterionForm(
        request.POST, instance=criterion, plan=plan, prefix=criterion_form_prefix(criterion)
    )
    if not form.is_valid():
        messages.error(request, _("Not saved: %(why)s") % {"why": _errors(form)})
        return _back(plan)
    try:
        saved = criterion_save(criterion=form.instance, actor=Actor.from_request(request))
    except ValidationError as exc:
        messages.error(request, _("Not saved: %(why)s") % {"why": " ".join(exc.messages)})
    except (NotPermitted, WorkflowConflict) as exc:
        messages.error(request, _("Not saved: %(why)s") % {"why": exc})
    else:
        messages.success(request, _("Criterion %(name)s saved.") % {"name": saved.name})
    return _back(plan)


@operator_page
@require_POST
def criterion_create(request: HttpRequest, pk: int) -> HttpResponse:
    return _save(request, _plan(request, pk), Criterion())


@operator_page
@require_POST
def criterion_change(request: HttpRequest, pk: int, criterion_id: int) -> HttpResponse:
    plan = _plan(request, pk)
    criterion = get_object_or_404(Criterion, pk=criterion_id, phase__plan=plan)
    return _save(request, plan, criterion)


@operator_page
@require_POST
def criterion_remove(request: HttpRequest, pk: int, criterion_id: int) -> HttpResponse:
    plan = _plan(request, pk)
    criterion = get_object_or_404(Criterion, pk=criterion_id, phase__plan=plan)
    if plan.is_finished:
        messages.error(request, _("Not done: the plan is finished; its criteria are history."))
        return _back(plan)
    try:
        criterion_delete(criterion=criterion, actor=Actor.from_request(request))
    except (NotPermitted, WorkflowConflict) as exc:
        messages.error(request, _("Not deleted: %(why)s") % {"why": exc})
    else:
        messages.success(request, _("Criterion %(name)s deleted.") % {"name": criterion.name})
    return _back(plan)


def criteria_context(plan: MigrationPlan, user) -> dict:
    """The plan page's criteria section: every phase's criteria (drafts too, before any gate
    exists), each with its edit form when the viewer may edit them."""
    editable = user.has_perm("monitoring.operate_cluster") and not plan.is_finished
    phases = []
    for phase in sorted(plan.phases.all(), key=lambda p: p.order):
        rows = []
        for criterion in phase.criteria.select_related("workload", "baseline_workload"):
            form = None
            if editable:
                form = CriterionForm(
                    instance=criterion, plan=plan, prefix=criterion_form_prefix(criterion)
                )
            rows.append((criterion, form))
        phases.append((phase, rows))
    new_form = CriterionForm(plan=plan, prefix="new") if editable else None
    return {
        "criteria_by_phase": phases,
        "criterion_new_form": new_form,
        "can_edit_criteria": editable,
    }
