"""Periodic work of the scheduling app: sync every enabled scheduler source; follow the
day/night calendars (Kueue quotas at window boundaries, Slurm deferrals of new jobs)."""

from __future__ import annotations

from celery import shared_task

from scheduling.errors import SchedulerSyncFailed
from scheduling.models import SchedulerSource
from scheduling.services.calendar_follow import (
    calendar_deferrals_follow,
)
from scheduling.services.calendar_follow import (
    calendar_windows_follow as follow_windows,
)
from scheduling.services.sync import scheduler_source_sync


@shared_task(
    name="scheduling.scheduler_sources_sync",
    acks_late=True,
    # Beat sends this every SCHEDULER_SYNC_SECONDS; each sync reads "now" from the scheduler
    # (jobs since the source's own watermark), so a late copy adds nothing the next one lacks.
    expires=60,
    max_retries=0,
    # Each call has its source's deadline (at most 60 s, three calls); these are the backstop
    # for a run over many sources.
    soft_time_limit=300,
    time_limit=330,
)
def scheduler_sources_sync() -> dict[str, int]:
    """Sync every enabled scheduler source. One that cannot be read is recorded on the source
    (its last error, shown in the admin) and skipped; the others still sync."""
    synced = failed = 0
    for source in SchedulerSource.objects.filter(enabled=True).select_related("cluster"):
        try:
            scheduler_source_sync(source=source)
        except SchedulerSyncFailed:
            failed += 1
        else:
            synced += 1
    return {"synced": synced, "unavailable": failed}


@shared_task(
    name="scheduling.calendar_windows_follow",
    acks_late=True,
    # Beat sends this every CALENDAR_FOLLOW_SECONDS; a late copy re-checks "now" and finds
    # nothing left to do.
    expires=120,
    max_retries=0,
    # Each Kubernetes or Slurm call has its source's deadline; the backstop for many calendars.
    soft_time_limit=300,
    time_limit=330,
)
def calendar_windows_follow() -> dict[str, int]:
    """Change each applied Kueue calendar's ClusterQueue quota at its window boundaries, and
    defer the training jobs submitted since each applied Slurm calendar's application."""
    quotas = follow_windows()
    deferrals = calendar_deferrals_follow()
    return {**quotas, "deferred": deferrals["deferred"], "defer_failed": deferrals["failed"]}
