"""One input contract on every path (issue 26 §7), each attack replayed once: a NUL or a
2.4 MB reason on the HTML command path, an unthrottled HTML flood of refusals, offsets
PostgreSQL refuses in time parameters, and a JSON body over Django's limit."""

from __future__ import annotations

import json

import pytest
from django.core.cache import cache

from rollout.models import Approval, AuditEntry, DeniedAttemptCount
from rollout.services.audit import Actor
from rollout.services.transitions import plan_promote, plan_start
from tests.rollout.conftest import rev


@pytest.fixture(autouse=True)
def fresh_throttle_counters():
    cache.clear()
    yield
    cache.clear()


def awaiting(plan_factory, users):
    plan = plan_factory()
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan_promote(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan.refresh_from_db()
    return plan


def page_approve(client, plan, comment: str):
    return client.post(
        f"/migrations/{plan.pk}/approve/",
        {"version": plan.version, "revision": rev(plan), "comment": comment},
    )


@pytest.mark.parametrize("comment", ["looks fine\x00", "x" * 2_400_000])
def test_the_page_refuses_what_the_api_refuses_and_stores_nothing(
    client, plan_factory, users, approvers, comment, settings
):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000_000
    plan = awaiting(plan_factory, users)
    client.force_login(approvers[1])
    before = AuditEntry.objects.count()
    response = page_approve(client, plan, comment)
    assert response.status_code == 302  # back to the plan with the reason, never a 500
    assert not Approval.objects.exists()
    assert AuditEntry.objects.count() == before
    shown = " ".join(str(m) for m in response.wsgi_request._messages)
    assert "reason" in shown


def test_an_admin_decision_goes_through_the_same_contract(client, plan_factory, users, approvers):
    plan = awaiting(plan_factory, users)
    client.force_login(approvers[1])
    response = client.post(
        f"/admin/rollout/gate/{plan.current_gate_id}/decide/",
        {
            "command": "reject",
            "reason": "no\x00",
            "revision": rev(plan),
            "expected_version": plan.version,
        },
    )
    assert response.status_code == 302
    plan.refresh_from_db()
    assert plan.state == "awaiting_approval" and not Approval.objects.exists()


def test_html_commands_share_the_apis_budget(client, plan_factory, users, approvers, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
            "approve": "3/min",
        },
    }
    plan = awaiting(plan_factory, users)
    client.force_login(users["customer"])
    codes = [page_approve(client, plan, "please").status_code for _ in range(5)]
    assert codes == [302, 302, 302, 429, 429]
    api = client.post(
        f"/api/v1/plans/{plan.pk}/approve/",
        {"revision": rev(plan)},
        content_type="application/json",
    )
    assert api.status_code == 429  # the same counter: the form bought no extra attempts


def test_a_customer_flooding_refusals_leaves_one_audit_row_and_a_count(client, plan_factory, users):
    plan = awaiting(plan_factory, users)
    client.force_login(users["customer"])
    for _ in range(40):
        assert page_approve(client, plan, "let me").status_code == 302
    assert AuditEntry.objects.filter(plan=plan, action="approve_denied").count() == 1
    assert DeniedAttemptCount.objects.get(plan=plan, action="approve").count == 40


def test_a_refusal_of_someone_holding_a_workflow_role_is_audited_each_time(plan_factory, users):
    from rest_framework.test import APIClient

    from accounts.models import User

    boss = User.objects.create_superuser("boss", password="x")
    plan = plan_factory()
    plan_start(plan_id=plan.pk, actor=Actor(boss))
    plan_promote(plan_id=plan.pk, actor=Actor(boss))
    client = APIClient()
    client.force_login(boss)
    for _ in range(3):  # four-eyes: the requester approving their own promotion
        response = client.post(
            f"/api/v1/plans/{plan.pk}/approve/", {"revision": rev(plan)}, format="json"
        )
        assert response.status_code == 403
    assert AuditEntry.objects.filter(plan=plan, action="approve_denied").count() == 3
    assert not DeniedAttemptCount.objects.exists()


@pytest.mark.parametrize("offset", ["+16:00", "+23:00", "-16:30"])
def test_offsets_postgresql_refuses_are_a_400_on_audit_and_dashboard_ranges(
    client_as, offset, cluster
):
    client = client_as("operator")
    stamp = f"2026-01-01T12:00:00{offset}".replace("+", "%2B")
    for url in (
        f"/api/v1/migration-audit/?since={stamp}",
        f"/api/v1/dashboards/overview/?start={stamp}",
        f"/api/v1/telemetry/series/?cluster=unified-a&metric=x&start={stamp}",
    ):
        response = client.get(url)
        assert response.status_code == 400, (url, response.status_code)
        assert "15:59" in response.content.decode(), url


def test_a_json_body_over_the_limit_gets_the_json_error_body(client_as):
    body = json.dumps({"name": "x" * (3 * 1024 * 1024), "scopes": ["read"]})
    response = client_as("operator").post("/api/v1/tokens/", body, content_type="application/json")
    assert response.status_code == 413
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["code"] == "payload_too_large"
