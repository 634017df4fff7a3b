"""Queues as the scheduler reports them: what waits per partition and why, with the
scheduler's estimated start, and how long jobs waited (submit → start) per tenant and per
hour of day of submission, as true percentiles of the waits (numpy's linear interpolation
between order statistics, not a mean of bucket means)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np
from django.utils import timezone

from accounts.selectors.scoping import scope_to_tenant
from cluster_portal.web.units import duration
from scheduling.models import SchedulerJob

WAIT_WINDOW = timedelta(days=7)


@dataclass
class PendingPartition:
    """The jobs pending in one partition of one cluster, soonest estimated start first."""

    cluster: str
    partition: str
    jobs: list[SchedulerJob] = field(default_factory=list)

    @property
    def cards(self) -> int:
        return sum(job.gpus + job.npus for job in self.jobs)

    @property
    def reasons(self) -> dict[str, int]:
        counts: dict[str, int] = defaultdict(int)
        for job in self.jobs:
            counts[job.state_reason or "None"] += 1
        return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def pending_by_partition(user, *, cluster: str = "") -> list[PendingPartition]:
    """Pending jobs ``user`` may see, grouped by cluster and partition."""
    jobs = SchedulerJob.objects.filter(state="PENDING").select_related("source__cluster", "tenant")
    if cluster:
        jobs = jobs.filter(source__cluster__name=cluster)
    jobs = scope_to_tenant(jobs, user, "tenant").order_by(
        "source__cluster__name", "partition", "estimated_start", "submit_time", "job_id"
    )
    groups: dict[tuple[str, str], PendingPartition] = {}
    for job in jobs:
        key = (job.source.cluster.name, job.partition)
        groups.setdefault(key, PendingPartition(cluster=key[0], partition=key[1])).jobs.append(job)
    for group in groups.values():
        group.jobs.sort(key=_queue_order)
    return list(groups.values())


def _queue_order(job: SchedulerJob) -> tuple:
    # Estimated jobs first, soonest first (whatever the database's NULL ordering), then the
    # rest by submission.
    never = datetime.max.replace(tzinfo=UTC)
    return (job.estimated_start is None, job.estimated_start or never,
            job.submit_time or never, job.job_id)  # fmt: skip


@dataclass(frozen=True)
class WaitStat:
    """Wait-time percentiles (seconds) of ``count`` jobs; ``hour`` is the UTC hour of day of
    submission (None: all hours)."""

    tenant: str  # slug
    tenant_name: str
    hour: int | None
    count: int
    p50_seconds: float
    p90_seconds: float

    @property
    def p50_text(self) -> str:
        return duration(self.p50_seconds)

    @property
    def p90_text(self) -> str:
        return duration(self.p90_seconds)


def _stat(slug: str, name: str, hour: int | None, waits: list[float]) -> WaitStat:
    p50, p90 = np.percentile(np.asarray(waits, dtype=float), [50, 90])
    return WaitStat(slug, name, hour, len(waits), float(p50), float(p90))


def wait_percentiles(
    user, *, now: datetime | None = None, window: timedelta = WAIT_WINDOW, cluster: str = ""
) -> tuple[list[WaitStat], list[WaitStat]]:
    """(per tenant, per tenant × hour of day) wait percentiles of the jobs ``user`` may see
    submitted in the last ``window`` that have started (a job still waiting has no wait
    yet: it is in :func:`pending_by_partition`)."""
    now = now or timezone.now()
    jobs = SchedulerJob.objects.filter(
        submit_time__gte=now - window, submit_time__lte=now, start_time__isnull=False
    )
    if cluster:
        jobs = jobs.filter(source__cluster__name=cluster)
    rows = scope_to_tenant(jobs, user, "tenant").values_list(
        "tenant__slug", "tenant__name", "submit_time", "start_time"
    )
    by_tenant: dict[tuple[str, str], list[float]] = defaultdict(list)
    by_hour: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    for slug, name, submitted, started in rows:
        wait = max((started - submitted).total_seconds(), 0.0)
        by_tenant[(slug, name)].append(wait)
        by_hour[(slug, name, submitted.astimezone(UTC).hour)].append(wait)
    tenants = [_stat(s, n, None, w) for (s, n), w in sorted(by_tenant.items())]
    hours = [_stat(s, n, h, w) for (s, n, h), w in sorted(by_hour.items())]
    return tenants, hours
