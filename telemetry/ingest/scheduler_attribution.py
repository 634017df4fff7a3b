"""The scheduler's attribution intervals (the write side): who holds which card, as the
workload scheduler allocated it.

The scheduling app turns each running job's allocation (Slurm ``gres_detail`` cards joined to
inventory cards) into :class:`SchedulerHolding` rows and hands the whole picture of one
cluster to :func:`scheduler_intervals_sync` at every successful sync; only this module writes
``kind=scheduler`` intervals. One interval per card, job and job start: a holding already open
is extended to the sync's time (a re-sync never duplicates it), one no longer held is ended at
the job's own end time when the scheduler reported one (a cancelled or finished job), else at
the sync's time. Exporter-label intervals of the same cards are not touched.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.db.models import F, Value
from django.db.models.functions import Greatest

from cluster_portal.web.copy_upsert import copy_available, copy_upsert
from telemetry.models import AttributionInterval, AttributionKind, Entity, EntityKind


@dataclass(frozen=True)
class SchedulerHolding:
    """One card (inventory accelerator) held by one scheduler job since ``started_at``."""

    accelerator_id: int
    job: str
    tenant_id: int
    host: str
    started_at: datetime


@dataclass
class SchedulerAttributionResult:
    """What one sync changed; ``untracked`` counts holdings whose card has no telemetry
    entity yet (no exporter or twin ever reported it): not attributed, said so."""

    started: int = 0
    extended: int = 0
    ended: int = 0
    untracked: int = 0


@transaction.atomic
def scheduler_intervals_sync(
    *,
    cluster_id: int,
    holdings: Iterable[SchedulerHolding],
    ends: Mapping[str, datetime],
    now: datetime,
    finished: Iterable[SchedulerHolding] = (),
) -> SchedulerAttributionResult:
    """Make the cluster's open scheduler intervals match ``holdings`` (the complete current
    picture). ``ends`` gives the end time the scheduler reported for jobs that ended (job id
    → time); an open interval of such a job ends there, never before its start or after
    ``now``. ``finished`` are holdings of ended jobs the scheduler reported in this sync (a
    job that started and ended between two syncs, or while the portal was down): one whose
    card has no interval from that start gets a closed one, so nothing is lost."""
    result = SchedulerAttributionResult()
    holdings = list(holdings)
    finished = list(finished)
    # The cluster's card entities, all of them: cheaper than sending 10,000 ids to ask for
    # nearly all of them.
    entity_of = dict(
        Entity.objects.filter(
            cluster_id=cluster_id, kind=EntityKind.ACCELERATOR, accelerator_id__isnull=False
        ).values_list("accelerator_id", "pk")
    )
    wanted: dict[tuple[int, str, datetime], SchedulerHolding] = {}
    for holding in holdings:
        entity_id = entity_of.get(holding.accelerator_id)
        if entity_id is None:
            result.untracked += 1
            continue
        wanted[(entity_id, holding.job, min(holding.started_at, now))] = holding
    scheduler = AttributionInterval.objects.filter(
        cluster_id=cluster_id, kind=AttributionKind.SCHEDULER
    )
    # Only the columns compared: a 10,000-card cluster confirms 10,000 rows every sync.
    open_rows = list(
        scheduler.filter(ended_at__isnull=True)
        .select_for_update()
        .values_list("pk", "entity_id", "hpc_job", "started_at", "last_seen_at")
    )
    step = float(settings.SCHEDULER_SYNC_SECONDS)
    changed = []
    for pk, entity_id, job, started_at, last_seen_at in open_rows:
        if wanted.pop((entity_id, job, started_at), None) is not None:
            result.extended += 1
        else:
            end = ends.get(job) or now
            end = max(started_at, min(end, now))
            changed.append(
                AttributionInterval(
                    pk=pk, ended_at=end, last_seen_at=max(started_at, min(last_seen_at, end))
                )
            )
            result.ended += 1
    if changed:
        AttributionInterval.objects.bulk_update(
            changed, ["last_seen_at", "ended_at"], batch_size=1000
        )
    if result.extended:
        # Every held card is confirmed at every sync. The ended ones are closed above, so the
        # open rows left are exactly the confirmed ones: one statement, no list of ids (a
        # per-row CASE over 10,000 cards took seconds, an id list a second).
        scheduler.filter(ended_at__isnull=True).update(
            last_seen_at=Greatest(F("last_seen_at"), Value(now)),
            observations=F("observations") + 1,
        )
    if wanted:
        # A holding ended earlier and seen again with the same start (a scheduler answer that
        # briefly lacked the job) reopens its row rather than colliding with it.
        closed = {
            (row.entity_id, row.started_at): row
            for row in scheduler.filter(
                entity_id__in={key[0] for key in wanted},
                started_at__in={key[2] for key in wanted},
                ended_at__isnull=False,
            )
        }
        reopened, created = [], []
        for (entity_id, job, started), holding in wanted.items():
            row = closed.get((entity_id, started))
            if row is not None and row.hpc_job == job:
                row.ended_at, row.last_seen_at = None, now
                reopened.append(row)
                continue
            created.append(
                AttributionInterval(
                    cluster_id=cluster_id,
                    entity_id=entity_id,
                    kind=AttributionKind.SCHEDULER,
                    hpc_job=job,
                    host=holding.host[:200],
                    tenant_id=holding.tenant_id,
                    started_at=started,
                    last_seen_at=now,
                    step_seconds=step,
                )  # fmt: skip
            )
        if reopened:
            AttributionInterval.objects.bulk_update(reopened, ["ended_at", "last_seen_at"])
        _insert(created)
        result.started = len(created) + len(reopened)
    _record_finished(cluster_id, finished, entity_of, ends, now, step, result)
    return result


def _record_finished(cluster_id, finished, entity_of, ends, now, step, result) -> None:
    """Closed intervals for ended jobs' holdings no interval covers yet."""
    wanted = {}
    for holding in finished:
        entity_id = entity_of.get(holding.accelerator_id)
        end = ends.get(holding.job)
        if entity_id is None or end is None or end <= holding.started_at:
            continue
        wanted[(entity_id, holding.started_at)] = (holding, min(end, now))
    if not wanted:
        return
    existing = set(
        AttributionInterval.objects.filter(
            kind=AttributionKind.SCHEDULER,
            entity_id__in={key[0] for key in wanted},
            started_at__in={key[1] for key in wanted},
        ).values_list("entity_id", "started_at")
    )
    created = [
        AttributionInterval(
            cluster_id=cluster_id,
            entity_id=entity_id,
            kind=AttributionKind.SCHEDULER,
            hpc_job=holding.job,
            host=holding.host[:200],
            tenant_id=holding.tenant_id,
            started_at=started,
            last_seen_at=end,
            ended_at=end,
            step_seconds=step,
        )  # fmt: skip
        for (entity_id, started), (holding, end) in wanted.items()
        if (entity_id, started) not in existing
    ]
    _insert(created)
    result.started += len(created)


# The columns a new scheduler interval sets (the others keep their model defaults).
_NEW_FIELDS = (
    "cluster_id", "entity_id", "kind", "hpc_job", "host", "tenant_id", "started_at",
    "last_seen_at", "ended_at", "step_seconds",
)  # fmt: skip


def _insert(created: list[AttributionInterval]) -> None:
    """New intervals, one already there (same card, kind and start) skipped: through COPY on
    PostgreSQL (the first sync of a 10,000-card cluster creates 10,000), in bulk elsewhere."""
    if not created:
        return
    if copy_available():
        copy_upsert(
            model=AttributionInterval,
            fields=_NEW_FIELDS,
            rows=([getattr(row, name) for name in _NEW_FIELDS] for row in created),
        )
    else:
        AttributionInterval.objects.bulk_create(created, ignore_conflicts=True, batch_size=1000)
