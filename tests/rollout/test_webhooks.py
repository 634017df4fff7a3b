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
