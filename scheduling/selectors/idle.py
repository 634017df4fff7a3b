"""Selectors for allocated-but-idle cards: the scheduler's allocation × measured utilization.

A card a running job holds (an open ``scheduler`` attribution interval) is *idle* while its
``accelerator_utilization_ratio`` stays under ``SCHEDULER_IDLE_UTILIZATION_PERCENT``: every
point of the read (a raw sample, or a rollup bucket's **maximum**, so one busy second inside a
bucket is not hidden by its mean) under the threshold. A run of such points counts once it
lasts ``SCHEDULER_IDLE_MINUTES``; a hole in the data (more than two steps without a point)
ends a run — no data is not idleness (``telemetry.read.runs_under`` finds the runs in the
database). Only the last :data:`LOOKBACK` is read. Idle card-hours add up, per job, the runs
that counted, clipped to the time the job held the card.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from accounts.models import Tenant
from scheduling.models import JOB_HOLDING_STATES, SchedulerJob, SchedulerSource
from telemetry.models import AttributionKind
from telemetry.read import (
    LocalBackend,
    backend_for,
    card_holdings,
    metrics_by_name,
    runs_under,
    span_entities,
)

LOOKBACK = timedelta(hours=6)
UTILIZATION = "accelerator_utilization_ratio"


@dataclass(frozen=True)
class IdleRule:
    """The thresholds in force (settings), shown beside the list."""

    ratio: float
    minutes: int

    @property
    def percent(self) -> float:
        return round(self.ratio * 100, 2)

    @classmethod
    def from_settings(cls) -> IdleRule:
        return cls(
            ratio=settings.SCHEDULER_IDLE_UTILIZATION_PERCENT / 100.0,
            minutes=int(settings.SCHEDULER_IDLE_MINUTES),
        )


@dataclass
class IdleJob:
    """A running job with at least one card idle for the rule's duration."""

    job: SchedulerJob
    cards_held: int
    cards_idle: int = 0  # cards whose idle run reaches the newest data
    cards_unmeasured: int = 0
    longest_idle: timedelta = timedelta(0)
    idle_since: datetime | None = None  # earliest start of a card's idle run that lasts till now
    idle_card_hours: float = 0.0
    cards: list[str] = field(default_factory=list)

    @property
    def longest_idle_minutes(self) -> int:
        return round(self.longest_idle.total_seconds() / 60)


@dataclass
class IdleTenant:
    """Idle card-hours of one tenant's listed jobs."""

    tenant: Tenant
    jobs: int
    cards_idle: int
    idle_card_hours: float


@dataclass
class IdleReport:
    """The list, the per-tenant totals and what was read (window, jobs looked at)."""

    rule: IdleRule
    jobs: list[IdleJob]
    tenants: list[IdleTenant]
    start: datetime
    end: datetime
    jobs_checked: int


def idle_allocations(
    jobs: QuerySet[SchedulerJob], *, now: datetime | None = None, rule: IdleRule | None = None
) -> IdleReport:
    """The allocated-but-idle jobs among ``jobs`` (already scoped to who asks) and their
    tenants, most idle card-hours first."""
    now = now or timezone.now()
    rule = rule or IdleRule.from_settings()
    start = now - LOOKBACK
    # A few sources for thousands of jobs: each job gets its source from here rather than a
    # joined row of its own, and the per-node JSON the list never shows is not decoded.
    sources = {s.pk: s for s in SchedulerSource.objects.select_related("cluster")}
    running = {}
    for job in (
        jobs.filter(state__in=JOB_HOLDING_STATES)
        .select_related("tenant")
        .defer("nodes", "allocation")
    ):
        job.source = sources[job.source_id]
        running[(job.source.cluster_id, str(job.job_id))] = job
    metric = metrics_by_name([UTILIZATION]).get(UTILIZATION)
    found: list[IdleJob] = []
    if running and metric is not None:
        clusters = {cluster for cluster, _job in running}
        holdings = card_holdings(
            start=start,
            end=now,
            cluster_ids=clusters,
            kind=AttributionKind.SCHEDULER,
            jobs={job for _cluster, job in running},
        )
        # The held cards as plain values (no model rows), but for PromQL-read clusters.
        entities = span_entities(
            {h.entity_id for h in holdings},
            {c for c in clusters if not isinstance(backend_for(c), LocalBackend)},
            known=(h.span_entity for h in holdings),
        )
        by_job = defaultdict(list)
        for holding in holdings:
            key = (entities[holding.entity_id].cluster_id, holding.job)
            if key in running and holding.open:
                by_job[key].append(holding)
        minimum = timedelta(minutes=rule.minutes)
        # One statement for every held card: the runs under the threshold are found in the
        # database (telemetry.read.runs_under), each card from its own holding's start.
        held = [(key, h) for key, holdings_of in by_job.items() for h in holdings_of]
        spans = runs_under(
            metric=metric,
            spans=[(entities[h.entity_id], h.start) for _key, h in held],
            end=now,
            threshold=rule.ratio,
        )
        rows: dict[tuple[int, str], IdleJob] = {}
        for (key, holding), span in zip(held, spans, strict=True):
            row = rows.setdefault(key, IdleJob(job=running[key], cards_held=len(by_job[key])))
            if not span.measured:
                row.cards_unmeasured += 1
                continue
            counted = False
            for run in span.runs:
                begin, end = max(run.start, holding.start), min(run.end, holding.until)
                if end - begin < minimum:
                    continue
                counted = True
                row.idle_card_hours += (end - begin).total_seconds() / 3600.0
                row.longest_idle = max(row.longest_idle, end - begin)
                if run.current:
                    row.cards_idle += 1
                    row.idle_since = min(row.idle_since or begin, begin)
            if counted:
                row.cards.append(holding.entity_key)
        found = [row for row in rows.values() if row.cards]
    found.sort(key=lambda r: (-r.idle_card_hours, r.job.job_id))
    tenants: dict[int, IdleTenant] = {}
    for row in found:
        entry = tenants.setdefault(
            row.job.tenant_id,
            IdleTenant(tenant=row.job.tenant, jobs=0, cards_idle=0, idle_card_hours=0.0),
        )
        entry.jobs += 1
        entry.cards_idle += row.cards_idle
        entry.idle_card_hours += row.idle_card_hours
    return IdleReport(
        rule=rule,
        jobs=found,
        tenants=sorted(tenants.values(), key=lambda t: -t.idle_card_hours),
        start=start,
        end=now,
        jobs_checked=len(running),
    )
