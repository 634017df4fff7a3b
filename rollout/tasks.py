"""Rollout's Celery tasks. Every task states its delivery options explicitly."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from cluster_portal.web.dispatch import dispatch_now
from rollout.models import WebhookDelivery
from rollout.services.analysis import analysis_due_run_ids, analysis_run_step
from rollout.services.router_callbacks import router_confirmations_expire
from rollout.services.router_dispatch import router_intents_sweep
from rollout.services.router_watch import routers_reread
from rollout.services.webhooks import (
    MAX_ATTEMPTS,
    retry_countdown,
    webhook_deliver,
    webhook_deliveries_due,
)


@shared_task(
    name="rollout.measure_analyses",
    acks_late=True,
    # Beat sends this every 10 s; a copy older than that is superseded by the next one, and a
    # duplicate is harmless: each step re-checks under the plan lock what is still due.
    expires=10,
    max_retries=0,
    # Measurements read telemetry, possibly from a cluster's PromQL server: each read has its
    # own wall-clock deadline (the data source's timeout, at most 60 s); these bound the run.
    soft_time_limit=240,
    time_limit=300,
)
def measure_analyses() -> dict[str, int]:
    """Take one measurement for every due metric of every running analysis."""
    now = timezone.now()
    # Deploy tools that never confirmed a share by callback: their steps pause first.
    router_confirmations_expire(now=now)
    due = analysis_due_run_ids(now=now)
    for run_id in due:
        analysis_run_step(run_id=run_id, now=now)
    # Router calls an automatic rollback intended, or a lost worker left unsent: sent at once
    # by the outbound queue's workers, so a slow router never delays the next measurement.
    dispatch_now("router intents", lambda: send_router_intents.delay())
    return {"runs": len(due)}


@shared_task(
    name="rollout.send_router_intents",
    acks_late=True,
    # Queued after every measurement pass (10 s): a copy older than that is superseded.
    expires=10,
    max_retries=0,
    # Each call has its router's deadline (≤ 30 s × ≤ 5 attempts); these are the backstop.
    soft_time_limit=200,
    time_limit=240,
)
def send_router_intents() -> dict[str, int]:
    """Send every router call that was intended and not yet sent, then re-read every running
    step's routers (weights and served split; one that lost the share pauses its step) — on
    the outbound queue, after each measurement pass, so a slow router never delays one."""
    sent = router_intents_sweep(now=timezone.now())
    return {"sent": sent, "read": routers_reread(now=timezone.now())}


@shared_task(
    name="rollout.deliver_webhook",
    bind=True,
    acks_late=True,
    max_retries=MAX_ATTEMPTS - 1,
    # A notification about a gate is still useful hours later; a day bounds a backlog.
    expires=86400,
    # The request has one wall-clock deadline (WEBHOOK_DEADLINE_SECONDS); the limits are the
    # backstop, and the attempt was recorded before the request, so a kill loses nothing.
    soft_time_limit=settings.WEBHOOK_DEADLINE_SECONDS + 20,
    time_limit=settings.WEBHOOK_DEADLINE_SECONDS + 30,
)
def deliver_webhook(self, delivery_id: int) -> str:
    """POST one signed delivery; retry 5xx/network errors with exponential backoff."""
    delivery = webhook_deliver(delivery_id=delivery_id)
    if delivery.status == WebhookDelivery.Status.RETRYING:
        raise self.retry(countdown=retry_countdown(delivery.attempts))
    return delivery.status


@shared_task(
    name="rollout.sweep_webhook_deliveries",
    acks_late=True,
    # Beat sends it every minute; the next run covers whatever a late one would.
    expires=60,
    max_retries=0,
)
def sweep_webhook_deliveries() -> dict[str, int]:
    """Send again the open deliveries whose task was lost (broker down at commit, a lost
    retry, a killed worker). Each delivery claims its attempt, so a duplicate sends nothing."""
    due = webhook_deliveries_due()
    sent = sum(
        dispatch_now(f"webhook delivery {pk}", lambda pk=pk: deliver_webhook.delay(pk))
        for pk in due
    )
    return {"due": len(due), "sent": sent}
