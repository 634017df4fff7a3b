"""The calendar's follow-ups, run by beat as the system (``scheduling.calendar_windows_follow``):
what an applied calendar needs after its application, without a new decision.

- Kueue: a ClusterQueue quota is one value, so it is changed at each window boundary
  (:func:`calendar_windows_follow`).
- Slurm: the DAILY reservation repeats by itself, but a deferral is per job, so training jobs
  submitted after the application are deferred too (:func:`calendar_deferrals_follow`).

Only the applied revision, still the newest and approved, is acted on: four eyes stay intact.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from accounts.services.actor import Actor
from scheduling.calendar.slurm import defer_pending, pending_to_defer
from scheduling.models import SchedulerSource
from scheduling.models_calendar import CalendarApplication, CalendarRevision, WindowCalendar
from scheduling.services.calendar import (
    CalendarConflict,
    application_finish,
    application_start,
    calendar_apply,
    revision_window,
    slurm_client_of,
    slurm_plan_of,
)
from scheduling.slurm.client import SchedulerError


def _applied_calendars(kind: str):
    """Calendars with an applied revision on an enabled scheduler source of ``kind``."""
    return WindowCalendar.objects.filter(
        applied__isnull=False,
        cluster__scheduler_source__kind=kind,
        cluster__scheduler_source__enabled=True,
    ).select_related("applied", "cluster__scheduler_source")


def _in_force(calendar: WindowCalendar, revision: CalendarRevision) -> bool:
    """The applied revision is still the newest and approved (a follow-up may act for it)."""
    newest = revision.number == calendar.revision
    return newest and revision.state == CalendarRevision.State.APPROVED


def calendar_windows_follow(*, now: datetime | None = None) -> dict[str, int]:
    """Re-apply, as the system, every applied Kueue calendar whose window changed since its
    last application (a ClusterQueue quota is one value: it must be changed at each window
    boundary). Slurm's DAILY reservation repeats by itself; its deferrals are followed by
    :func:`calendar_deferrals_follow`. Only the applied revision, still the newest and
    approved, is re-applied: four eyes stay intact."""
    now = now or timezone.now()
    applied = failed = 0
    for calendar in _applied_calendars(SchedulerSource.Kind.KUBERNETES):
        revision = calendar.applied
        if not _in_force(calendar, revision):
            continue
        last = CalendarApplication.objects.filter(revision=revision).first()
        window = "day" if revision_window(revision).in_day(now) else "night"
        asked = [s.get("asked", {}).get("window") for s in (last.steps if last else [])]
        if (
            last is not None
            and last.outcome == CalendarApplication.Outcome.CONFIRMED
            and asked == [window]
        ):
            continue
        try:
            result = calendar_apply(
                cluster=calendar.cluster,
                actor=Actor(),
                expected_revision=revision.number,
                now=now,
            )
        except CalendarConflict:
            failed += 1
            continue
        applied += result.outcome == CalendarApplication.Outcome.CONFIRMED
        failed += result.outcome != CalendarApplication.Outcome.CONFIRMED
    return {"applied": applied, "failed": failed}


def calendar_deferrals_follow(*, now: datetime | None = None) -> dict[str, int]:
    """Defer, as the system, the training jobs submitted since an applied Slurm calendar's
    last application: in the day window, each pending job of a training partition asking at
    least ``defer_min_cards`` cards whose begin time is not yet in the night (the rule of
    :func:`scheduling.calendar.slurm.eligible_jobs`, as when the calendar was applied).

    Safe to repeat and to kill at any moment: the jobs are read first and nothing is written
    when none needs deferring; otherwise a *running* application (the lease, one per calendar)
    is committed before anything is sent, and the jobs are read again under it. A job already
    deferred — by this run, a killed one or anyone — reads back with its night begin time and
    is never sent again; a killed run's lease expires after :data:`STALE_APPLICATION`."""
    now = now or timezone.now()
    deferred = failed = 0
    for calendar in _applied_calendars(SchedulerSource.Kind.SLURM):
        revision, source = calendar.applied, calendar.cluster.scheduler_source
        if not _in_force(calendar, revision) or revision_window(revision).night_start(now) is None:
            continue
        plan = slurm_plan_of(source, revision)
        try:
            client = slurm_client_of(source)
            if not pending_to_defer(client, plan, now=now):
                continue
        except SchedulerError:
            failed += 1  # unreadable: the next follow-up tries again; nothing was sent
            continue
        try:
            with transaction.atomic():
                locked = WindowCalendar.objects.select_for_update().get(pk=calendar.pk)
                if locked.revision != revision.number:
                    continue  # a new revision was requested meanwhile
                application = application_start(locked, revision, Actor(), "defer")
        except CalendarConflict:
            continue  # another worker holds the lease
        result = application_finish(
            application, calendar=calendar, actor=Actor(), action="defer",
            run=lambda client=client, plan=plan: defer_pending(client, plan, now=now),
        )  # fmt: skip
        deferred += sum(1 for s in result.steps if s["ok"])
        failed += result.outcome != CalendarApplication.Outcome.CONFIRMED
    return {"deferred": deferred, "failed": failed}
