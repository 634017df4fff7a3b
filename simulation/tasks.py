"""Twin tick tasks. Every task states its delivery options explicitly.

All tick tasks are ``acks_late`` with ``reject_on_worker_lost``: a worker killed mid-tick leaves
the message unacknowledged, it is redelivered, and the tick (which committed nothing) runs
again. Sequence numbers make duplicate deliveries no-ops. A tick that fails on a dead database
connection is retried rather than acknowledged as failed, so the tick is not lost.
"""

from __future__ import annotations

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError

from cluster_portal.web.dispatch import dispatch_now
from scheduling.services.calendar import calendar_whatif_record
from simulation.models import TwinRun, WhatIfRun
from simulation.services import twin_pool_tick, twin_tick
from simulation.services.calendar_whatif import calendar_whatif_run
from simulation.services.lag import tick_lag_record
from simulation.services.whatif_run import (
    RUN_WHATIF_SOFT_TIME_LIMIT,
    RUN_WHATIF_TIME_LIMIT,
    whatif_execute,
    whatif_redispatch_mark,
    whatif_runs_to_redispatch,
)

TICK_OPTIONS = {
    "acks_late": True,
    "reject_on_worker_lost": True,
    # Older than a few intervals, a tick message is superseded by the next beat's.
    "expires": 300,
    # A lost broker or database connection mid-tick (PostgreSQL restarted, a failover) rolls
    # the tick back; it is retried, with the same sequence number, on a fresh connection.
    "max_retries": 5,
    "autoretry_for": (ConnectionError, OperationalError, InterfaceError),
    "retry_backoff": True,
}


@shared_task(name="simulation.advance_run", **TICK_OPTIONS)
def advance_run(run_id: int, expected_seq: int) -> dict:
    """One scheduler tick. The engine is coupled (every mechanism reads the whole state), so
    one task steps it once per tick; it is not split into parts."""
    outcome = twin_tick(run_id=run_id, expected_seq=expected_seq)
    return {
        "committed": outcome.committed,
        "seq": outcome.seq,
        "samples": outcome.samples,
        "reason": outcome.reason,
    }


@shared_task(name="simulation.advance_pool", **TICK_OPTIONS)
def advance_pool(run_id: int, expected_seq: int) -> dict:
    outcome = twin_pool_tick(run_id=run_id, expected_seq=expected_seq)
    return {"committed": outcome.committed, "seq": outcome.seq, "reason": outcome.reason}


@shared_task(
    name="simulation.schedule_ticks",
    acks_late=True,
    expires=settings.TWIN_TICK_SECONDS,
    max_retries=0,
)
def schedule_ticks() -> int:
    """Queue one scheduler tick per running run at its current sequence; record tick lag."""
    runs = list(TwinRun.objects.filter(status=TwinRun.Status.RUNNING))
    for run in runs:
        tick_lag_record(run=run)
        advance_run.delay(run.pk, run.tick_seq)
    return len(runs)


@shared_task(
    name="simulation.schedule_pool_ticks",
    acks_late=True,
    expires=settings.TWIN_POOL_TICK_SECONDS,
    max_retries=0,
)
def schedule_pool_ticks() -> int:
    """Queue one memory-pool tick per running run at its current pool sequence."""
    runs = TwinRun.objects.filter(status=TwinRun.Status.RUNNING, tick_seq__gt=0)
    pairs = list(runs.values_list("id", "pool_seq"))
    for run_id, seq in pairs:
        advance_pool.delay(run_id, seq)
    return len(pairs)


@shared_task(
    name="simulation.run_whatif",
    bind=True,
    # A worker lost mid-run leaves the message unacknowledged; the redelivered task starts
    # the run over (whatif_execute resets it), so late acks lose nothing.
    acks_late=True,
    reject_on_worker_lost=True,
    # A what-if nobody picked up within an hour is stale: the operator has moved on.
    expires=3600,
    # The default run finishes in seconds; the largest form allows (4,096 cards × 48 h) in
    # minutes. The soft limit marks the run failed instead of killing it silently.
    soft_time_limit=RUN_WHATIF_SOFT_TIME_LIMIT,
    time_limit=RUN_WHATIF_TIME_LIMIT,
    max_retries=0,
)
def run_whatif(self, run_id: int) -> dict:
    """Run one what-if comparison and store its result on the run (once: see the claim)."""
    from celery.exceptions import SoftTimeLimitExceeded

    try:
        run = whatif_execute(run_id=run_id, task_id=self.request.id or "")
    except SoftTimeLimitExceeded:
        WhatIfRun.objects.filter(pk=run_id).update(
            status=WhatIfRun.Status.FAILED, error="time limit exceeded"
        )
        return {"status": "failed", "progress": None}
    return {"status": run.status, "progress": run.progress}


@shared_task(
    name="simulation.sweep_whatif_runs",
    acks_late=True,
    # Beat sends it every minute; a late copy is superseded by the next.
    expires=60,
    max_retries=0,
)
def sweep_whatif_runs() -> dict[str, int]:
    """Send again the task of every what-if run whose task was lost (broker down at commit, a
    worker that died without a redelivery). The run's claim makes a duplicate a no-op."""
    due = whatif_runs_to_redispatch()
    sent = 0
    for run_id in due:
        whatif_redispatch_mark(run_id=run_id)
        sent += dispatch_now(f"what-if run {run_id}", lambda r=run_id: run_whatif.delay(r))
    return {"due": len(due), "sent": sent}


@shared_task(
    name="simulation.calendar_whatif",
    acks_late=True,
    reject_on_worker_lost=True,
    # Nobody waits an hour for a before-you-sign figure: a stale request is dropped.
    expires=3600,
    # Three seeds x two calendars x three days of history: minutes at most on one core.
    soft_time_limit=RUN_WHATIF_SOFT_TIME_LIMIT,
    time_limit=RUN_WHATIF_TIME_LIMIT,
    max_retries=0,
)
def calendar_whatif(revision_id: int) -> str:
    """Replay the cluster's job history under the revision; the figures land on it."""
    from celery.exceptions import SoftTimeLimitExceeded

    try:
        return calendar_whatif_run(revision_id=revision_id)
    except SoftTimeLimitExceeded:
        calendar_whatif_record(revision_id=revision_id, state="failed", error="time limit exceeded")
        return "failed"
