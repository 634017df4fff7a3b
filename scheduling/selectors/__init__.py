"""Reads of what the schedulers reported, scoped to who asks."""

from __future__ import annotations

from django.db.models import QuerySet

from accounts.selectors.scoping import scope_to_tenant
from scheduling.models import SchedulerJob, SchedulerSource


def jobs_visible_to(user, *, cluster: str = "", state: str = "") -> QuerySet[SchedulerJob]:
    """Scheduler jobs ``user`` may see (customers: their tenant's, as the account mappings
    assigned them), newest job id first, optionally of one cluster and one state."""
    jobs = SchedulerJob.objects.select_related("source__cluster", "tenant").order_by(
        "source__cluster__name", "-job_id"
    )
    if cluster:
        jobs = jobs.filter(source__cluster__name=cluster)
    if state:
        jobs = jobs.filter(state=state)
    return scope_to_tenant(jobs, user, "tenant")


def sources_with_status() -> QuerySet[SchedulerSource]:
    """Every scheduler source with its cluster (staff only: callers check)."""
    return SchedulerSource.objects.select_related("cluster").order_by("cluster__name")
