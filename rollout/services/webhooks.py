"""Signed webhook notifications: queue one delivery per subscription, deliver with retries.

The body is JSON, signed with the subscription's secret the Standard Webhooks way
(``webhook-id`` = the delivery's id, the same on every retry; ``webhook-timestamp``;
``webhook-signature``) and, for one more release, with the deprecated
``X-Portal-Timestamp``/``X-Portal-Signature`` too (:mod:`rollout.services.webhook_signing`),
so a receiver can verify both the sender and the freshness (old timestamps are replays).
"""

from __future__ import annotations

import http.client
import json
from datetime import timedelta

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from cluster_portal.web.dispatch import dispatch_after_commit
from cluster_portal.web.outbound import REFUSED, OutboundRefused, OutboundTimeout, outbound_request
from rollout.models import MigrationPlan, WebhookDelivery, WebhookSubscription
from rollout.services.webhook_signing import (
    WebhookSecretInvalid,
    signature_headers,
    webhook_signature,
)

__all__ = ["webhook_signature"]  # re-exported: the deprecated X-Portal-Signature

MAX_ATTEMPTS = 6
OPEN_STATUSES = (WebhookDelivery.Status.PENDING, WebhookDelivery.Status.RETRYING)
# An attempt's lease outlives its request (deadline, plus time to record the answer); past
# it the attempt is taken for dead (its worker was killed) and the delivery may go again.
ATTEMPT_LEASE_SECONDS = 60
# How long past its due time an open delivery waits before the sweep re-sends it: longer
# than a task normally takes to reach a worker, so the sweep only finds lost ones.
SWEEP_GRACE_SECONDS = 120


def webhooks_emit(
    *, plan: MigrationPlan, event: str, data: dict, customer_data: dict | None = None
) -> list[int]:
    """Queue ``event`` for every active subscription that wants it (caller's transaction).

    ``customer_data`` replaces ``data`` for the tenant's own subscriptions: customers get roles
    where staff get names (``"by": "operator"``, never a staff username).

    The Celery task is sent only after commit: a rolled-back transition notifies nobody. A
    broker that is down then is logged, not raised (the command has committed); the delivery
    stays pending and the periodic sweep sends it (``rollout.sweep_webhook_deliveries``).
    """
    subscriptions = WebhookSubscription.objects.filter(active=True).filter(
        Q(tenant__isnull=True) | Q(tenant_id=plan.tenant_id)
    )
    payload = {
        "event": event,
        "plan": {
            "id": plan.pk,
            "name": plan.name,
            "tenant": plan.tenant.slug,
            "state": plan.state,
            "phase": plan.current_phase,
            "gray_step_percent": plan.current_step_percent,
            "version": plan.version,
        },
        "data": data,
        "at": timezone.now().isoformat(),
    }
    ids = []
    for subscription in subscriptions:
        if event not in subscription.events:
            continue
        shown = payload
        if subscription.tenant_id is not None and customer_data is not None:
            shown = {**payload, "data": customer_data}
        delivery = WebhookDelivery.objects.create(
            subscription=subscription, event=event, payload=shown
        )
        ids.append(delivery.pk)
    for delivery_id in ids:
        dispatch_after_commit(
            f"webhook delivery {delivery_id}",
            lambda d=delivery_id: current_app.send_task("rollout.deliver_webhook", args=[d]),
        )
    return ids


def webhook_attempt_claim(*, delivery_id: int, now=None) -> WebhookDelivery | None:
    """Record one attempt of a delivery BEFORE its request is sent; ``None`` if none may start.

    One conditional UPDATE increments ``attempts`` and takes a lease that outlives the
    request's deadline, and only matches an open delivery (pending or retrying) of an active
    subscription with attempts left and no attempt in flight. So a worker killed mid-request
    has still used up that attempt (its redelivery counts on from there), two copies of the
    task — a redelivery, the sweep — never POST at once, and a delivered one is never sent
    again. The receiver deduplicates by ``webhook-id`` (= ``X-Portal-Delivery``) should a
    killed attempt have reached it: delivery is at least once, and never twice in flight.
    """
    now = now or timezone.now()
    claimed = (
        WebhookDelivery.objects.filter(
            pk=delivery_id,
            status__in=OPEN_STATUSES,
            attempts__lt=MAX_ATTEMPTS,
            subscription__active=True,
        )
        .filter(Q(attempt_lease_until__isnull=True) | Q(attempt_lease_until__lte=now))
        .update(
            attempts=F("attempts") + 1,
            last_attempt_at=now,
            attempt_lease_until=now + timedelta(seconds=ATTEMPT_LEASE_SECONDS),
        )
    )
    if not claimed:
        return None
    return WebhookDelivery.objects.select_related("subscription").get(pk=delivery_id)


def _close_unclaimable(delivery_id: int) -> WebhookDelivery:
    """Why no attempt could start: a closed delivery stays as it is; one whose subscription
    was deactivated is cancelled; one out of attempts (the last one killed) has failed."""
    delivery = WebhookDelivery.objects.select_related("subscription").get(pk=delivery_id)
    if delivery.status not in OPEN_STATUSES:
        return delivery
    if not delivery.subscription.active:
        WebhookDelivery.objects.filter(pk=delivery.pk, status__in=OPEN_STATUSES).update(
            status=WebhookDelivery.Status.CANCELLED,
            last_error="subscription deactivated",
            attempt_lease_until=None,
            next_attempt_at=None,
        )
    elif delivery.attempts >= MAX_ATTEMPTS and not _in_flight(delivery):
        WebhookDelivery.objects.filter(pk=delivery.pk, status__in=OPEN_STATUSES).update(
            status=WebhookDelivery.Status.FAILED,
            last_error=delivery.last_error or "no answer (attempt interrupted)",
            attempt_lease_until=None,
            next_attempt_at=None,
        )
    delivery.refresh_from_db()
    return delivery


def _in_flight(delivery: WebhookDelivery) -> bool:
    lease = delivery.attempt_lease_until
    return lease is not None and lease > timezone.now()


def webhook_deliver(*, delivery_id: int) -> WebhookDelivery:
    """POST one delivery once; the attempt is recorded first. ``retrying`` asks for a retry.

    The request has one wall-clock deadline (``WEBHOOK_DEADLINE_SECONDS``) over connect,
    sending the body and the answer's headers: a receiver that trickles cannot hold the
    worker beyond it. The body of the answer is never read.
    """
    delivery = webhook_attempt_claim(delivery_id=delivery_id)
    if delivery is None:
        # Delivered, failed or cancelled already (a duplicate task must not POST twice), an
        # attempt in flight elsewhere, a deactivated subscription, or no attempts left.
        return _close_unclaimable(delivery_id)
    subscription = delivery.subscription
    body = json.dumps({"delivery": delivery.pk, **delivery.payload}, sort_keys=True).encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "cluster-portal-webhooks/1",
        "X-Portal-Event": delivery.event,
        "X-Portal-Delivery": str(delivery.pk),
    }
    try:
        # webhook-id is the delivery's id: every retry of it repeats it (receivers dedupe).
        headers |= signature_headers(secret=subscription.secret, msg_id=str(delivery.pk), body=body)
    except WebhookSecretInvalid as exc:
        # A secret saved before it was validated: no retry can fix it, and nothing is sent.
        WebhookDelivery.objects.filter(pk=delivery.pk, status__in=OPEN_STATUSES).update(
            status=WebhookDelivery.Status.FAILED,
            last_error=f"signing secret: {exc}"[:500],
            attempt_lease_until=None,
            next_attempt_at=None,
        )
        delivery.refresh_from_db()
        return delivery
    code: int | None = None
    error = ""
    try:
        # Guarded: no loopback/link-local/private receivers (unless allow-listed), also not
        # through a redirect; the stored error never echoes the receiver's answer.
        answer = outbound_request(
            subscription.url,
            method="POST",
            data=body,
            headers=headers,
            deadline_seconds=settings.WEBHOOK_DEADLINE_SECONDS,
            max_bytes=0,
            read_body=False,
        )
        code = answer.status
        if not 200 <= code < 300:
            error = f"HTTP {code}"
    except OutboundRefused:
        error = REFUSED
    except OutboundTimeout:
        error = f"no answer within {settings.WEBHOOK_DEADLINE_SECONDS:g} s"
    except (OSError, http.client.HTTPException) as exc:
        error = f"network error: {type(exc).__name__}"[:500]
    fields: dict = {"last_status_code": code, "last_error": error, "attempt_lease_until": None}
    if code is not None and 200 <= code < 300:
        fields.update(status=WebhookDelivery.Status.DELIVERED, delivered_at=timezone.now())
    # 5xx, 408, 429 and network errors are the receiver's passing trouble: retry. Any other
    # 4xx is a configuration problem a retry cannot fix.
    elif (code is None or code >= 500 or code in (408, 429)) and delivery.attempts < MAX_ATTEMPTS:
        fields.update(
            status=WebhookDelivery.Status.RETRYING,
            next_attempt_at=timezone.now() + timedelta(seconds=retry_countdown(delivery.attempts)),
        )
    else:
        fields.update(status=WebhookDelivery.Status.FAILED, next_attempt_at=None)
    # Only the attempt that holds the lease writes its outcome (the row may have been
    # cancelled meanwhile: a deactivation wins over a late answer).
    WebhookDelivery.objects.filter(pk=delivery.pk, status__in=OPEN_STATUSES).update(**fields)
    delivery.refresh_from_db()
    return delivery


def retry_countdown(attempts: int) -> int:
    """Seconds before the next attempt: 5 s, 10 s, 20 s, 40 s, 80 s after attempts 1…5, so a
    receiver that restarts is caught within minutes."""
    return 5 * 2 ** (max(attempts, 1) - 1)


def webhook_deliveries_due(*, now=None, limit: int = 500) -> list[int]:
    """Open deliveries whose task was lost: never sent (the broker was down at commit), a
    retry that never came (its message was lost with the broker), or an attempt whose worker
    died (lease lapsed). ``SWEEP_GRACE_SECONDS`` past when they were due, so a task still on
    its way is not duplicated (and the claim makes a duplicate harmless anyway)."""
    now = now or timezone.now()
    overdue = now - timedelta(seconds=SWEEP_GRACE_SECONDS)
    rows = (
        WebhookDelivery.objects.filter(status__in=OPEN_STATUSES, subscription__active=True)
        .filter(Q(attempt_lease_until__isnull=True) | Q(attempt_lease_until__lte=now))
        .filter(
            Q(next_attempt_at__isnull=True, created_at__lte=overdue)
            | Q(next_attempt_at__lte=overdue)
        )
        .order_by("created_at")
        .values_list("pk", flat=True)[:limit]
    )
    return list(rows)


@transaction.atomic
def webhook_subscription_save(*, subscription: WebhookSubscription) -> WebhookSubscription:
    """Save a subscription; deactivating it cancels its open deliveries at once (an attempt
    already in flight finishes, and its answer is not recorded over the cancellation)."""
    subscription.save()
    if not subscription.active:
        WebhookDelivery.objects.filter(subscription=subscription, status__in=OPEN_STATUSES).update(
            status=WebhookDelivery.Status.CANCELLED,
            last_error="subscription deactivated",
            next_attempt_at=None,
        )
    return subscription
