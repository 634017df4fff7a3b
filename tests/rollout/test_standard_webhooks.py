"""Standard Webhooks: every outgoing request verifies with the reference library beside the
deprecated portal headers, retries repeat their webhook-id, and a deploy tool's callback may be
signed the standard way (a wrong one is refused and writes nothing)."""

from __future__ import annotations

import base64
import json
import time
from datetime import UTC, datetime

import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from rollout import routers
from rollout.models import (
    AuditEntry,
    PlanState,
    RouterCall,
    WebhookDelivery,
    WebhookSubscription,
)
from rollout.services.audit import Actor
from rollout.services.commands import plan_command
from rollout.services.transitions import plan_start
from rollout.services.webhook_signing import signature_headers, webhook_signature
from rollout.services.webhooks import webhook_deliver
from rollout.tasks import deliver_webhook
from tests.rollout.conftest import rev
from tests.rollout.test_webhook_router import confirm, to_gray, webhook_plan
from tests.servers import ScriptedHTTPServer

WHSEC = "whsec_" + base64.b64encode(bytes(range(32))).decode()
PLAIN = "s3cret"
REF = "PORTAL_ROUTER_SECRET_STD"


@pytest.fixture(autouse=True)
def loopback_allowed(settings, monkeypatch):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    monkeypatch.setattr(routers.webhook, "BACKOFF_SECONDS", 0.01)


@pytest.fixture
def server():
    made = []

    def make(answers):
        made.append(ScriptedHTTPServer(answers))
        return made[-1]

    yield make
    for one in made:
        one.stop()


def subscribe(url: str, secret: str) -> WebhookSubscription:
    return WebhookSubscription.objects.create(
        name="ops", url=url, events=["transition"], secret=secret
    )


def lower(headers: dict) -> dict:
    return {k.lower(): v for k, v in headers.items()}


# Notifications


@pytest.mark.parametrize(
    ("secret", "key"), [(WHSEC, bytes(range(32))), (PLAIN, PLAIN.encode())], ids=["whsec", "plain"]
)
def test_a_delivery_verifies_with_the_library_and_still_carries_the_deprecated_headers(
    server, plan_factory, users, secret, key
):
    receiver = server([(200, "")])
    subscribe(receiver.url, secret)
    plan_start(plan_id=plan_factory().pk, actor=Actor(users["operator"]))
    delivery = WebhookDelivery.objects.get()
    assert deliver_webhook.apply(args=[delivery.pk]).get() == "delivered"
    headers, body = receiver.requests[0]
    # The receiver's check, as the spec's library does it: a whsec_ secret as written, a
    # plain one as its UTF-8 bytes.
    payload = Webhook(secret if secret.startswith("whsec_") else key).verify(body, headers)
    assert payload["event"] == "transition" and payload["delivery"] == delivery.pk
    assert Webhook(key).verify(body, headers) == payload
    sent = lower(headers)
    assert sent["webhook-id"] == sent["x-portal-delivery"] == str(delivery.pk)
    assert sent["webhook-timestamp"] == sent["x-portal-timestamp"]
    assert sent["webhook-signature"].startswith("v1,")
    # The deprecated header is keyed by the secret string as it always was.
    assert sent["x-portal-signature"] == webhook_signature(
        secret=secret, timestamp=sent["x-portal-timestamp"], body=body
    )


def test_a_tampered_body_or_an_old_timestamp_fails_verification(server, plan_factory, users):
    receiver = server([(200, "")])
    subscribe(receiver.url, WHSEC)
    plan_start(plan_id=plan_factory().pk, actor=Actor(users["operator"]))
    deliver_webhook.apply(args=[WebhookDelivery.objects.get().pk])
    headers, body = receiver.requests[0]
    Webhook(WHSEC).verify(body, headers)
    with pytest.raises(WebhookVerificationError, match="No matching signature"):
        Webhook(WHSEC).verify(body.replace(b"running", b"aborted"), headers)
    with pytest.raises(WebhookVerificationError):
        Webhook("whsec_" + base64.b64encode(b"another key").decode()).verify(body, headers)
    # Signed genuinely, but an hour ago: a replay.
    old = signature_headers(secret=WHSEC, msg_id="7", body=body, now=time.time() - 3600)
    with pytest.raises(WebhookVerificationError, match="too old"):
        Webhook(WHSEC).verify(body, old)
    # Moving a real signature's timestamp breaks it.
    moved = {**lower(headers), "webhook-timestamp": str(int(time.time()) - 10)}
    with pytest.raises(WebhookVerificationError, match="No matching signature"):
        Webhook(WHSEC).verify(body, moved)


def test_every_retry_of_a_delivery_repeats_its_webhook_id(server, plan_factory, users):
    receiver = server([(503, ""), (500, ""), (200, "")])
    subscribe(receiver.url, WHSEC)
    plan_start(plan_id=plan_factory().pk, actor=Actor(users["operator"]))
    delivery = WebhookDelivery.objects.get()
    deliver_webhook.apply(args=[delivery.pk])
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("delivered", 3)
    assert len(receiver.requests) == 3
    assert {lower(h)["webhook-id"] for h, _b in receiver.requests} == {str(delivery.pk)}
    for headers, body in receiver.requests:
        Webhook(WHSEC).verify(body, headers)


def test_a_whsec_secret_that_is_not_base64_is_refused_by_the_model_and_the_admin_form(db):
    from django.core.exceptions import ValidationError

    from rollout.webhook_admin import WebhookSubscriptionForm

    bad = WebhookSubscription(name="x", url="https://example.com/h", events=["transition"])
    for secret in ("whsec_", "whsec_a", "whsec_not base64!"):
        bad.secret = secret
        with pytest.raises(ValidationError) as caught:
            bad.full_clean()
        assert "secret" in caught.value.message_dict
    bad.secret = WHSEC
    bad.full_clean()
    bad.secret = "whsec_" + base64.b64encode(b"k" * 24).decode().rstrip("=")  # unpadded is fine
    bad.full_clean()
    form = WebhookSubscriptionForm(
        data={
            "name": "x",
            "url": "https://example.com/h",
            "events": '["transition"]',
            "active": "on",
            "new_secret": "whsec_a",
        }
    )
    assert not form.is_valid()
    assert "whsec_" in " ".join(form.errors["new_secret"])
    assert not WebhookSubscription.objects.exists()


def test_a_delivery_whose_stored_secret_is_not_base64_fails_and_sends_nothing(server, db):
    receiver = server([(200, "")])
    delivery = WebhookDelivery.objects.create(
        subscription=subscribe(receiver.url, "whsec_a"), event="transition", payload={}
    )
    delivery = webhook_deliver(delivery_id=delivery.pk)
    assert delivery.status == "failed" and "whsec_" in delivery.last_error
    assert receiver.requests == []


# The deploy-tool router


def test_a_deploy_tool_verifies_every_call_and_its_retries_repeat_the_webhook_id(
    server, plan_factory, users, monkeypatch
):
    monkeypatch.setenv(REF, WHSEC)
    tool = server([confirm, (503, ""), (503, ""), confirm])
    plan, _router = webhook_plan(plan_factory, tool.url, secret_ref=REF)
    plan = to_gray(plan, users)
    assert plan.state == PlanState.RUNNING
    for headers, body in tool.requests:
        Webhook(WHSEC).verify(body, headers)
        sent = lower(headers)
        assert sent["webhook-id"] == sent["idempotency-key"] == json.loads(body)["idempotency_key"]
        assert sent["x-portal-signature"] == webhook_signature(
            secret=WHSEC, timestamp=sent["x-portal-timestamp"], body=body
        )
    gray = [lower(h)["webhook-id"] for h, b in tool.requests if json.loads(b)["share"] == 5.0]
    assert len(gray) == 3 and len(set(gray)) == 1


def test_a_router_secret_that_is_not_valid_whsec_sends_nothing_and_pauses(
    server, plan_factory, users, monkeypatch
):
    monkeypatch.setenv(REF, WHSEC)
    tool = server([confirm])
    plan, _router = webhook_plan(plan_factory, tool.url, secret_ref=REF)
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    sent = len(tool.requests)  # the start confirmed the workload at 0%
    monkeypatch.setenv(REF, "whsec_a")
    plan_command(command="promote", plan_id=plan.pk, actor=Actor(users["operator"]))
    plan_command(
        command="approve", plan_id=plan.pk, actor=Actor(users["approver"]), revision=rev(plan)
    )
    plan.refresh_from_db()
    assert plan.state == PlanState.PAUSED and len(tool.requests) == sent
    assert REF in plan.audit_entries.filter(to_state=PlanState.PAUSED).get().reason


def standard_callback(client, router, payload: dict, *, key, age: int = 0, signature=None):
    body = json.dumps(payload).encode()
    stamp = int(time.time()) - age
    msg_id = f"cb-{payload['idempotency_key']}"
    signed = Webhook(key).sign(msg_id, datetime.fromtimestamp(stamp, tz=UTC), body.decode())
    return client.post(
        f"/api/v1/router-callbacks/{router.pk}/",
        body,
        content_type="application/json",
        headers={
            "webhook-id": msg_id,
            "webhook-timestamp": str(stamp),
            "webhook-signature": signature or signed,
        },
    )


@pytest.mark.parametrize(
    ("secret", "key"), [(WHSEC, WHSEC), (PLAIN, PLAIN.encode())], ids=["whsec", "plain"]
)
def test_a_callback_signed_the_standard_way_is_accepted_and_a_wrong_one_writes_nothing(
    server, plan_factory, users, client, monkeypatch, secret, key
):
    monkeypatch.setenv(REF, secret)
    tool = server([confirm, (202, "")])
    plan, router = webhook_plan(plan_factory, tool.url, secret_ref=REF, criteria={"gray": [{}]})
    plan = to_gray(plan, users)
    call = RouterCall.objects.get(outcome="pending")
    body = {"idempotency_key": call.idempotency_key, "status": "confirmed", "share": 5}
    audits = AuditEntry.objects.count()
    wrong_key = b"not the router's secret"
    refused = [
        standard_callback(client, router, body, key=wrong_key),
        standard_callback(client, router, body, key=key, age=3600),
        standard_callback(client, router, body, key=key, signature="v1,!!not base64!!"),
        standard_callback(client, router, body, key=key, signature="no version"),
        standard_callback(client, router, body, key=key, signature="v2,AAAA"),
    ]
    assert [r.status_code for r in refused] == [401] * 5
    assert all("webhook-signature" in r.json()["detail"] for r in refused)
    call.refresh_from_db()
    assert call.outcome == "pending" and AuditEntry.objects.count() == audits
    assert plan.current_gate.runs.get().traffic_at is None
    response = standard_callback(client, router, body, key=key)
    assert response.status_code == 200 and response.json()["outcome"] == "confirmed"
    assert plan.current_gate.runs.get().traffic_at is not None


def test_a_callback_with_standard_headers_is_not_let_through_by_the_deprecated_ones(
    server, plan_factory, users, client, monkeypatch
):
    monkeypatch.setenv(REF, WHSEC)
    tool = server([confirm, (202, "")])
    plan, router = webhook_plan(plan_factory, tool.url, secret_ref=REF, criteria={"gray": [{}]})
    to_gray(plan, users)
    call = RouterCall.objects.get(outcome="pending")
    body = json.dumps({"idempotency_key": call.idempotency_key, "status": "confirmed", "share": 5})
    stamp = str(int(time.time()))
    response = client.post(
        f"/api/v1/router-callbacks/{router.pk}/",
        body,
        content_type="application/json",
        headers={
            "X-Portal-Timestamp": stamp,
            "X-Portal-Signature": webhook_signature(
                secret=WHSEC, timestamp=stamp, body=body.encode()
            ),
            "webhook-id": "x",
            "webhook-timestamp": stamp,
            "webhook-signature": "v1,AAAA",
        },
    )
    assert response.status_code == 401
    call.refresh_from_db()
    assert call.outcome == "pending"
