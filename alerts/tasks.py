"""Alert evaluation task (name kept from before the split: it is a wire format)."""

from __future__ import annotations

from celery import shared_task

from alerts.evaluate import alerts_evaluate


@shared_task(
    name="monitoring.evaluate_alerts",
    acks_late=True,
    # Each run evaluates every rule from scratch, so a run queued behind a stopped worker for
    # longer than the beat period (30 s) is superseded by the next one: drop it.
    expires=30,
    # The next beat is the retry; retrying at once would overlap it. Overlapping runs are safe
    # anyway (open alerts are unique per rule and entity), just wasted work.
    max_retries=0,
    # Rules over PromQL clusters read their servers, each read within its source's deadline
    # (at most 60 s); the limits keep a run of many slow sources from holding the worker.
    soft_time_limit=120,
    time_limit=150,
)
def evaluate_alerts() -> dict:
    """Open, refresh and resolve alerts from the enabled rules (see alerts)."""
    return alerts_evaluate()
