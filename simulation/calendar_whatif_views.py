"""The before-you-sign what-if of a calendar revision: queued from the calendar page (staff:
the approver needs the figure as much as the operator); the figures land on the revision
and the calendar page shows them."""

from __future__ import annotations

from django.contrib import messages
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from accounts.access import staff_page
from cluster_portal.web.dispatch import dispatch_after_commit
from scheduling.models_calendar import CalendarRevision
from scheduling.services.calendar import calendar_whatif_record
from simulation.tasks import calendar_whatif


@staff_page
@require_POST
def calendar_whatif_queue(request: HttpRequest, pk: int) -> HttpResponse:
    """Queue the replay of revision ``pk`` (a running one is not queued twice)."""
    revision = get_object_or_404(CalendarRevision.objects.select_related("calendar"), pk=pk)
    cluster_pk = revision.calendar.cluster_id
    if (revision.whatif or {}).get("state") == "queued":
        messages.info(request, _("This revision's what-if is already queued."))
        return redirect("scheduler-calendar", pk=cluster_pk)
    with transaction.atomic():
        calendar_whatif_record(revision_id=revision.pk, state="queued")
        dispatch_after_commit(
            f"calendar what-if {revision.pk}", lambda: calendar_whatif.delay(revision.pk)
        )
    messages.success(
        request,
        _(
            "What-if of revision %(n)s queued: the last days of this cluster's jobs replayed "
            "through the twin; the figures appear here when done."
        )
        % {"n": revision.number},
    )
    return redirect("scheduler-calendar", pk=cluster_pk)
