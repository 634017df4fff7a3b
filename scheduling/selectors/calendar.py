"""Reads of the window calendars (staff only: a calendar is the cluster's, no tenant's)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q

from inventory.models import Cluster
from scheduling.models_calendar import (
    CalendarApplication,
    CalendarAuditEntry,
    CalendarRevision,
    WindowCalendar,
)

RECENT = 20


@dataclass
class CalendarView:
    """A cluster's calendar with its recent revisions, applications and audit rows."""

    cluster: Cluster
    calendar: WindowCalendar | None
    revisions: list[CalendarRevision]
    applications: list[CalendarApplication]
    audit: list[CalendarAuditEntry]

    @property
    def newest(self) -> CalendarRevision | None:
        return self.revisions[0] if self.revisions else None


def calendar_view(cluster: Cluster) -> CalendarView:
    calendar = WindowCalendar.objects.select_related("applied").filter(cluster=cluster).first()
    if calendar is None:
        return CalendarView(cluster, None, [], [], [])
    revisions = list(
        calendar.revisions.select_related("requested_by", "decided_by").order_by("-number")[:RECENT]
    )
    applications = list(
        CalendarApplication.objects.filter(revision__calendar=calendar)
        .select_related("revision", "applied_by")
        .order_by("-started_at", "-id")[:RECENT]
    )
    audit = list(calendar.audit_entries.order_by("-at", "-id")[:RECENT])
    return CalendarView(cluster, calendar, revisions, applications, audit)


def calendars_overview() -> list[CalendarView]:
    """Every cluster with a scheduler source or a calendar, by name."""
    clusters = Cluster.objects.filter(
        Q(scheduler_source__isnull=False) | Q(window_calendar__isnull=False)
    ).order_by("name")
    return [calendar_view(cluster) for cluster in clusters]
