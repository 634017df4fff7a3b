"""Run a calendar revision's what-if and store it on the revision (through scheduling's
service: the revision is scheduling's row)."""

from __future__ import annotations

from scheduling.models_calendar import CalendarRevision
from scheduling.services.calendar import calendar_whatif_record
from simulation.selectors_calendar import calendar_whatif


def calendar_whatif_run(*, revision_id: int, days: int = 3, seeds=(7, 8, 9)) -> str:
    """``done`` with the figures, or ``failed`` with the reason (a history too thin to replay,
    a cluster without cards): never raises for those."""
    revision = CalendarRevision.objects.select_related("calendar__cluster").get(pk=revision_id)
    try:
        result = calendar_whatif(
            cluster=revision.calendar.cluster, revision=revision, days=days, seeds=seeds
        )
    except ValueError as exc:
        calendar_whatif_record(revision_id=revision_id, state="failed", error=str(exc))
        return "failed"
    calendar_whatif_record(revision_id=revision_id, state="done", result=result)
    return "done"
