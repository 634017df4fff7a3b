"""Rollout's Celery tasks. Every task states its delivery options explicitly."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from rollout.models import WebhookDelivery
from rollout.services.analysis import analysis_due_run_ids, analysis_run_step
from rollout.services.webhooks import MAX_ATTEMPTS, webhook_deliver


@shared_task(
    name="rollout.measure_analyses",
    acks_late=True,
    # Beat sends this every 10 s; a copy older than that is superseded by the next one, and a
    # duplicate is harmless: each step re-checks under the plan lock what is still due.
    expires=10,
    max_retries=0,
)
def measure_analyses() -> dict[str, int]:
    """Take one measurement for every due metric of every running analysis."""
    now = timezone.now()
    due = analysis_due_run_ids(now=now)
    for run_id in due:
        analysis_run_step(run_id=run_id, now=now)
    return {"runs": len(due)}


@shared_task(
    name="rollout.deliver_webhook",
    bind=True,
    acks_late=True,
    max_retries=MAX_ATTEMPTS - 1,
    # A notification about a gate is still useful hours later; a day bounds a backlog.
    expires=86400,
)
def deliver_webhook(self, delivery_id: int) -> str:
    """POST one signed delivery; retry 5xx/network errors with exponential backoff."""
    delivery = webhook_deliver(delivery_id=delivery_id)
    if delivery.status == WebhookDelivery.Status.RETRYING:
        # 5 s, 10 s, 20 s, 40 s, 80 s: a receiver that restarts is caught within minutes.
        raise self.retry(countdown=5 * 2 ** (delivery.attempts - 1))
    return delivery.status
