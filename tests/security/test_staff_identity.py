"""Staff usernames never reach customers (issue 26 §8), replayed once per place they leaked:
the alerts API's ``acknowledged_by``, tenant tokens' ``created_by`` and the tenant's webhook
payloads (``"by"``). Customers see roles; staff still see names."""

from __future__ import annotations

import pytest

from accounts.services.tokens import token_create
from alerts.services import alert_acknowledge
from rollout.models import WebhookDelivery, WebhookSubscription
from rollout.services.audit import Actor
from rollout.services.transitions import plan_start
from tests.alerts.test_alerts_access import alert_of

pytestmark = pytest.mark.django_db


def test_customers_see_who_acknowledged_their_alert_as_a_role(client_as, users):
    alert = alert_of("acme")
    alert_acknowledge(alert=alert, user=users["operator"])
    seen = client_as("customer").get("/api/v1/alerts/").json()["results"]
    assert [row["acknowledged_by"] for row in seen] == ["operator"]
    staff = client_as("operator").get("/api/v1/alerts/").json()["results"]
    assert [row["acknowledged_by"] for row in staff] == [users["operator"].username]


def test_a_tenant_token_made_by_staff_shows_customers_a_role(client_as, users, tenants):
    token_create(
        name="acme-ro", scopes=["read"], tenant=tenants["acme"], created_by=users["operator"]
    )
    seen = client_as("customer").get("/api/v1/tokens/").json()["results"]
    assert [row["created_by"] for row in seen] == ["operator"]
    staff = client_as("operator").get("/api/v1/tokens/").json()["results"]
    assert [row["created_by"] for row in staff] == [users["operator"].username]


def test_a_customers_own_tokens_still_name_them(client_as, users):
    created = client_as("customer").post(
        "/api/v1/tokens/", {"name": "mine", "scopes": ["read"]}, content_type="application/json"
    )
    assert created.json()["created_by"] == users["customer"].username


def test_the_tenants_webhooks_name_the_role_and_staff_webhooks_the_person(
    plan_factory, users, tenants
):
    events = ["transition"]
    theirs = WebhookSubscription.objects.create(
        name="acme", url="https://acme.example/hook", events=events, secret="s" * 32,
        tenant=tenants["acme"],
    )  # fmt: skip
    ours = WebhookSubscription.objects.create(
        name="ops", url="https://ops.example/hook", events=events, secret="s" * 32
    )
    plan = plan_factory()
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    by = {
        d.subscription_id: d.payload["data"]["by"]
        for d in WebhookDelivery.objects.filter(event="transition")
    }
    assert by == {theirs.pk: "operator", ours.pk: users["operator"].username}
