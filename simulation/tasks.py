"""Twin tick tasks. Every task states its delivery options explicitly."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from simulation.models import TwinRun
from simulation.services import twin_tick


@shared_task(
    name="simulation.advance_run",
    acks_late=True,
    # A worker killed mid-tick leaves the message unacknowledged: it is redelivered and the
    # tick (which committed nothing) runs again. Sequence checks make duplicates no-ops.
    reject_on_worker_lost=True,
    expires=300,
    max_retries=3,
    autoretry_for=(ConnectionError,),
    retry_backoff=True,
)
def advance_run(run_id: int, expected_seq: int) -> dict:
    outcome = twin_tick(run_id=run_id, expected_seq=expected_seq)
    return {
        "committed": outcome.committed,
        "seq": outcome.seq,
        "samples": outcome.samples,
        "reason": outcome.reason,
    }


@shared_task(
    name="simulation.schedule_ticks",
    acks_late=True,
    expires=settings.TWIN_TICK_SECONDS,
    max_retries=0,
)
def schedule_ticks() -> int:
    """Queue one tick for every running twin run, at its current sequence number."""
    runs = TwinRun.objects.filter(status=TwinRun.Status.RUNNING).values_list("id", "tick_seq")
    for run_id, seq in runs:
        advance_run.delay(run_id, seq)
    return len(runs)
