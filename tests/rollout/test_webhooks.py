"""Webhooks: a receiver verifies the HMAC signature; 5xx answers are retried."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from rollout.models import WebhookDelivery, WebhookSubscription
from rollout.services.audit import Actor
from rollout.services.transitions import plan_start
from rollout.tasks import deliver_webhook


@pytest.fixture(autouse=True)
def loopback_allowed(settings):
    """These tests run their exporter/receiver on 127.0.0.1: allow-list it explicitly, as an
    operator would (OUTBOUND_ALLOWED_NETWORKS); by default loopback is refused."""
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]


SECRET = "s3cret"


class Receiver:
    """A local HTTP endpoint answering with the queued status codes, then 200."""

    def __init__(self, statuses: list[int]):
        self.statuses = list(statuses)
        self.requests: list[tuple[dict, bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append((dict(self.headers), body))
                self.send_response(receiver.statuses.pop(0) if receiver.statuses else 200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"

    def verify(self, headers: dict, body: bytes) -> bool:
        signed = headers["X-Portal-Timestamp"].encode() + b"." + body
        expected = "sha256=" + hmac.new(SECRET.encode(), signed, hashlib.sha256).hexdigest()
        return hmac.compare_digest(expected, headers["X-Portal-Signature"])

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver_factory():
    made = []

    def make(statuses):
        made.append(Receiver(statuses))
        return made[-1]

    yield make
    for receiver in made:
        receiver.close()


def subscribe(url: str, events=("transition",)) -> WebhookSubscription:
    return WebhookSubscription.objects.create(
        name="ops", url=url, events=list(events), secret=SECRET
    )


def test_a_transition_is_delivered_signed_after_commit(
    receiver_factory, plan_factory, users, django_capture_on_commit_callbacks, settings
):
    receiver = receiver_factory([])
    subscribe(receiver.url, events=("transition", "completed"))
    plan = plan_factory()
    sent = []
    from celery import current_app

    original = current_app.send_task
    current_app.send_task = lambda name, args: sent.append((name, args))
    try:
        with django_capture_on_commit_callbacks(execute=True):
            plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    finally:
        current_app.send_task = original
    delivery = WebhookDelivery.objects.get()
    assert sent == [("rollout.deliver_webhook", [delivery.pk])]
    assert deliver_webhook.apply(args=[delivery.pk]).get() == "delivered"
    headers, body = receiver.requests[0]
    assert receiver.verify(headers, body)
    payload = json.loads(body)
    assert payload["event"] == "transition" and payload["data"]["to"] == "running"
    assert payload["plan"]["tenant"] == "acme"
    # A tampered body fails verification.
    assert not receiver.verify(headers, body.replace(b"running", b"aborted"))


def test_5xx_answers_are_retried_until_delivered(receiver_factory, plan_factory, users):
    receiver = receiver_factory([503, 500])
    subscribe(receiver.url)
    plan_start(plan_id=plan_factory().pk, actor=Actor(users["operator"]))
    delivery = WebhookDelivery.objects.get()
    # Eager apply runs the retries in place (the countdown applies on a real worker).
    deliver_webhook.apply(args=[delivery.pk])
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("delivered", 3, 200)
    assert len(receiver.requests) == 3
    assert all(receiver.verify(h, b) for h, b in receiver.requests)


def test_a_4xx_answer_is_not_retried(receiver_factory, plan_factory, users):
    receiver = receiver_factory([410])
    subscribe(receiver.url)
    plan_start(plan_id=plan_factory().pk, actor=Actor(users["operator"]))
    delivery = WebhookDelivery.objects.get()
    deliver_webhook.apply(args=[delivery.pk])
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("failed", 1)


def test_subscriptions_validate_their_events(db):
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError):
        WebhookSubscription(name="x", url="http://x", events=["nope"], secret="s").full_clean()


def test_the_attempt_is_counted_before_the_request_and_holds_a_lease(receiver_factory, db):
    from rollout.services.webhooks import webhook_attempt_claim

    receiver = receiver_factory([])
    subscription = subscribe(receiver.url)
    delivery = WebhookDelivery.objects.create(
        subscription=subscription, event="transition", payload={}
    )
    claimed = webhook_attempt_claim(delivery_id=delivery.pk)
    assert claimed.attempts == 1 and claimed.attempt_lease_until is not None
    # While that attempt may be in flight, no second one starts.
    assert webhook_attempt_claim(delivery_id=delivery.pk) is None
    assert receiver.requests == []


def test_a_delivery_whose_last_attempt_was_killed_fails_instead_of_sending_again(
    receiver_factory, db
):
    from datetime import timedelta

    from django.utils import timezone

    from rollout.services.webhooks import MAX_ATTEMPTS, webhook_deliver

    receiver = receiver_factory([])
    delivery = WebhookDelivery.objects.create(
        subscription=subscribe(receiver.url),
        event="transition",
        payload={},
        status="retrying",
        attempts=MAX_ATTEMPTS,
        attempt_lease_until=timezone.now() - timedelta(seconds=1),
    )
    assert webhook_deliver(delivery_id=delivery.pk).status == "failed"
    assert receiver.requests == []


def test_the_sweep_finds_only_lost_deliveries(receiver_factory, db):
    from datetime import timedelta

    from django.utils import timezone

    from rollout.services.webhooks import webhook_deliveries_due

    subscription = subscribe(receiver_factory([]).url)
    now = timezone.now()

    def make(**fields) -> int:
        row = WebhookDelivery.objects.create(
            subscription=subscription, event="transition", payload={}, **fields
        )
        WebhookDelivery.objects.filter(pk=row.pk).update(
            created_at=fields.pop("created", now - timedelta(minutes=10))
        )
        return row.pk

    never_sent = make()
    lost_retry = make(status="retrying", attempts=1, next_attempt_at=now - timedelta(minutes=5))
    dead_attempt = make(attempts=1, attempt_lease_until=now - timedelta(seconds=1))
    make(status="delivered", attempts=1)
    make(status="retrying", attempts=1, next_attempt_at=now + timedelta(seconds=20))  # on time
    make(attempts=1, attempt_lease_until=now + timedelta(seconds=30))  # in flight
    fresh = WebhookDelivery.objects.create(subscription=subscription, event="x", payload={})
    due = webhook_deliveries_due(now=now)
    assert set(due) == {never_sent, lost_retry, dead_attempt} and fresh.pk not in due
