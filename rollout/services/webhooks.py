"""Signed webhook notifications: queue one delivery per subscription, deliver with retries.

The body is JSON; ``X-Portal-Signature: sha256=<hex>`` is HMAC-SHA256 with the
subscription's secret over ``<X-Portal-Timestamp>.<body>``, so a receiver can verify both
the sender and the freshness (reject old timestamps to stop replays).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import urllib.error
import urllib.request

from celery import current_app
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from cluster_portal.web.outbound import REFUSED, outbound_opener, refused_by_policy
from rollout.models import MigrationPlan, WebhookDelivery, WebhookSubscription

TIMEOUT_SECONDS = 10
_OPENER = outbound_opener()
MAX_ATTEMPTS = 6


def webhook_signature(*, secret: str, timestamp: str, body: bytes) -> str:
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + digest.hexdigest()


def webhooks_emit(*, plan: MigrationPlan, event: str, data: dict) -> list[int]:
    """Queue ``event`` for every active subscription that wants it (caller's transaction).

    The Celery task is sent only after commit: a rolled-back transition notifies nobody.
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
        delivery = WebhookDelivery.objects.create(
            subscription=subscription, event=event, payload=payload
        )
        ids.append(delivery.pk)
    for delivery_id in ids:
        transaction.on_commit(
            lambda d=delivery_id: current_app.send_task("rollout.deliver_webhook", args=[d])
        )
    return ids


def webhook_deliver(*, delivery_id: int) -> WebhookDelivery:
    """POST one delivery once; records the attempt. Status ``retrying`` asks for a retry."""
    delivery = WebhookDelivery.objects.select_related("subscription").get(pk=delivery_id)
    if delivery.status in (WebhookDelivery.Status.DELIVERED, WebhookDelivery.Status.FAILED):
        return delivery  # a duplicate task delivery after success must not POST twice
    subscription = delivery.subscription
    body = json.dumps({"delivery": delivery.pk, **delivery.payload}, sort_keys=True).encode()
    timestamp = str(int(time.time()))
    request = urllib.request.Request(
        subscription.url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "User-Agent": "cluster-portal-webhooks/1",
            "X-Portal-Event": delivery.event,
            "X-Portal-Delivery": str(delivery.pk),
            "X-Portal-Timestamp": timestamp,
            "X-Portal-Signature": webhook_signature(
                secret=subscription.secret, timestamp=timestamp, body=body
            ),
        },
    )
    delivery.attempts += 1
    code: int | None = None
    error = ""
    try:
        # Guarded: no loopback/link-local/private receivers (unless allow-listed), also not
        # through a redirect; the stored error never echoes the receiver's answer.
        with _OPENER.open(request, timeout=TIMEOUT_SECONDS) as response:
            code = response.status
    except urllib.error.HTTPError as exc:
        exc.close()
        code, error = exc.code, f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        if refused_by_policy(exc):
            error = REFUSED
        else:
            reason = getattr(exc, "reason", exc)
            error = f"network error: {type(reason).__name__}"[:500]
    delivery.last_status_code = code
    delivery.last_error = error
    if code is not None and 200 <= code < 300:
        delivery.status = WebhookDelivery.Status.DELIVERED
        delivery.delivered_at = timezone.now()
    # 5xx, 408, 429 and network errors are the receiver's passing trouble: retry. Any other
    # 4xx is a configuration problem a retry cannot fix.
    elif (code is None or code >= 500 or code in (408, 429)) and delivery.attempts < MAX_ATTEMPTS:
        delivery.status = WebhookDelivery.Status.RETRYING
    else:
        delivery.status = WebhookDelivery.Status.FAILED
    delivery.save()
    return delivery
