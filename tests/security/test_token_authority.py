"""Attacks on tokens that outlived their owner's authority (issue 26 §1, §9), replayed once.

Each was a 200/201 (or an advanced plan) before: a token answered for reads and ingestion after
its owner was deactivated or left every group, a customer moved to another tenant kept reading
the old one, an approval counted after its approver lost the role, and a superuser alone walked
a plan from pilot to succeeded with four force-promotes.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import IntegrationToken, TokenEvent, User
from accounts.services.tokens import token_create
from rollout.models import PlanState
from rollout.services.audit import Actor
from rollout.services.transitions import plan_promote, plan_start
from tests.rollout.conftest import rev

READ_URL = "/api/v1/plans/"
INGEST_URL = "/api/v1/telemetry/prometheus/?cluster=unified-a&source=dcgm"
LINE = 'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-x-0",modelName="H100",Hostname="dgx-01"} 50'


def bearer(plaintext: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {plaintext}")
    return client


def push(client: APIClient):
    return client.post(INGEST_URL, data=LINE.encode(), content_type="text/plain; version=0.0.4")


@pytest.fixture
def operator_token(users) -> str:
    return token_create(
        name="exporter", scopes=["read", "ingest"], created_by=users["operator"]
    ).plaintext


def test_a_token_of_a_deactivated_owner_reads_and_ingests_nothing(users, cluster, operator_token):
    client = bearer(operator_token)
    assert client.get(READ_URL).status_code == 200
    users["operator"].is_active = False
    users["operator"].save()
    for response in (client.get(READ_URL), push(client)):
        assert response.status_code == 401
        assert "deactivated" in response.json()["detail"]


def test_a_token_whose_owner_left_every_group_reads_and_ingests_nothing(
    users, cluster, operator_token
):
    client = bearer(operator_token)
    assert push(client).status_code == 201
    users["operator"].groups.clear()
    assert client.get(READ_URL).status_code == 403  # an all-tenant token, owner sees no tenant
    assert push(client).status_code == 403


def test_an_ingest_token_stops_ingesting_when_its_owner_is_no_longer_an_operator(
    users, cluster, operator_token
):
    from accounts.services.roles import ROLE_APPROVER, roles_ensure

    owner = users["operator"]
    owner.groups.set([roles_ensure()[ROLE_APPROVER]])  # still staff, still sees every tenant
    client = bearer(operator_token)
    assert client.get(READ_URL).status_code == 200
    response = push(client)
    assert response.status_code == 403 and "operator role" in response.json()["detail"]


def test_a_customer_moved_to_another_tenant_no_longer_reads_the_old_one(
    client_as, users, tenants, plan_factory
):
    plan = plan_factory()
    created = client_as("customer").post(
        "/api/v1/tokens/", {"name": "mine", "scopes": ["read"]}, content_type="application/json"
    )
    client = bearer(created.json()["token"])
    assert [p["id"] for p in client.get(READ_URL).json()["results"]] == [plan.pk]
    customer = users["customer"]
    customer.tenant = tenants["panda"]
    customer.save()
    response = client.get(READ_URL)
    assert response.status_code == 403 and "tenant" in response.json()["detail"]
    assert client.get(f"/api/v1/plans/{plan.pk}/audit/").status_code == 403


def test_an_approval_stops_counting_when_its_approver_loses_the_role(
    plan_factory, users, approvers
):
    plan = plan_factory(required_approvals=2)
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan_promote(plan_id=plan.pk, actor=Actor(users["operator"]))
    first, second = approvers[1], approvers[2]
    client = APIClient()
    client.force_login(first)
    url = f"/api/v1/plans/{plan.pk}/approve/"
    assert client.post(url, {"revision": rev(plan)}, format="json").status_code == 200
    first.groups.clear()
    client.force_login(second)
    assert client.post(url, {"revision": rev(plan)}, format="json").status_code == 200
    plan.refresh_from_db()
    assert plan.state == PlanState.AWAITING_APPROVAL  # 1 of 2: the first approval lapsed
    assert plan.current_phase == "pilot"


def test_an_expired_token_is_a_401_that_says_it_expired(users):
    issued = token_create(name="short", scopes=["read"], created_by=users["operator"])
    client = bearer(issued.plaintext)
    assert client.get(READ_URL).status_code == 200
    IntegrationToken.objects.filter(pk=issued.token.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    response = client.get(READ_URL)
    assert response.status_code == 401 and "expired" in response.json()["detail"]


def test_deactivating_a_user_in_the_admin_revokes_their_tokens_and_says_who(
    client, users, django_capture_on_commit_callbacks
):
    boss = User.objects.create_superuser("boss", password="x")
    victim = users["operator"]
    issued = token_create(name="exporter", scopes=["ingest"], created_by=victim)
    client.force_login(boss)
    form = {
        "username": victim.username,
        "is_staff": "on",
        "groups": list(victim.groups.values_list("pk", flat=True)),
        "date_joined_0": victim.date_joined.strftime("%Y-%m-%d"),
        "date_joined_1": victim.date_joined.strftime("%H:%M:%S"),
        "tenant": "",
    }  # no "is_active": the box is unticked
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/admin/monitoring/user/{victim.pk}/change/", form)
    assert response.status_code == 302
    issued.token.refresh_from_db()
    assert issued.token.revoked_at is not None
    event = TokenEvent.objects.get(token_id=issued.token.pk, action="revoked")
    assert (event.cause, event.actor_username) == ("owner_deactivated", "boss")


def test_tokens_of_a_deleted_user_are_revoked_not_left_acting_for_nobody(users, tenants):
    person = User.objects.create_user("leaver", password="x", tenant=tenants["acme"])
    issued = token_create(name="l", scopes=["read"], created_by=person, tenant=tenants["acme"])
    person.delete()
    issued.token.refresh_from_db()
    assert issued.token.owner_id is None and issued.token.revoked_at is not None
    assert bearer(issued.plaintext).get(READ_URL).status_code == 401


def test_a_superuser_alone_cannot_walk_a_plan_to_the_end_with_force_promote(plan_factory, users):
    boss = User.objects.create_superuser("boss", password="x")
    plan = plan_factory(gray_steps=[50, 100])
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    client = APIClient()
    client.force_login(boss)

    def force():
        url = f"/api/v1/plans/{plan.pk}/force-promote/"
        return client.post(url, {"reason": "outage", "revision": rev(plan)}, format="json")

    assert force().status_code == 200
    plan.refresh_from_db()
    assert (plan.current_phase, plan.gray_step_index) == ("gray", 0)  # the first step: alone
    assert force().status_code == 200  # a vote now, not a decision
    plan.refresh_from_db()
    assert (plan.current_phase, plan.gray_step_index) == ("gray", 0)
    assert force().status_code == 409  # and the same person cannot vote twice
    # A second person with break-glass completes the step (one step, never the whole plan).
    from django.contrib.auth.models import Permission

    from accounts.services.roles import ROLE_APPROVER, roles_ensure

    other = User.objects.create_user("bg", password="x", is_staff=True)
    other.groups.add(roles_ensure()[ROLE_APPROVER])
    other.user_permissions.add(Permission.objects.get(codename="force_promote_migrations"))
    client.force_login(other)
    assert force().status_code == 200
    plan.refresh_from_db()
    assert (plan.current_phase, plan.gray_step_index) == ("gray", 1)
