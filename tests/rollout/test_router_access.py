"""Who may see a plan's router calls and choose its router (API and page), and bad input."""

from __future__ import annotations

import pytest

from rollout.models import AuditEntry, MigrationPlan, TrafficRouter
from tests.access import ApiAccessCases, PageAccessCases
from tests.rollout.conftest import plan_for_access
from tests.rollout.test_api import TenantScopedApiCases


class TestRouterCallsAccess(TenantScopedApiCases):
    route = "rollout-api:plan-router-calls"
    path = "/api/v1/plans/{pk}/router-calls/"


class TestRouterChoiceApi(ApiAccessCases):
    route = "rollout-api:plan-router"
    method = "post"
    allowed_roles = ("operator",)
    hidden_roles = ("other_customer",)
    content_type = "application/json"

    def get_url(self, users) -> str:
        return f"/api/v1/plans/{plan_for_access().pk}/router/"

    def post_data(self, users) -> dict:
        return {"router": None}

    def other_tenant_url(self, users, tenants) -> str:
        return f"/api/v1/plans/{plan_for_access('panda').pk}/router/"


class TestRouterChoicePage(PageAccessCases):
    route = "migration-router"
    method = "post"
    allowed_roles = ("operator", "approver", "customer")
    hidden_roles = ("other_customer",)

    def get_url(self, users) -> str:
        return f"/migrations/{plan_for_access().pk}/router/"

    def other_tenant_url(self, users, tenants) -> str:
        return f"/migrations/{plan_for_access('panda').pk}/router/"


def _router(name="gw") -> TrafficRouter:
    return TrafficRouter.objects.create(
        name=name,
        kind="haproxy",
        haproxy_address="unix:/nowhere.sock",
        haproxy_backend="llm",
        haproxy_source_server="a",
        haproxy_target_server="b",
    )


@pytest.mark.django_db
def test_an_operator_chooses_a_plans_router_and_it_is_audited(client_as, users):
    plan = plan_for_access()
    router = _router()
    response = client_as("operator").post(
        f"/api/v1/plans/{plan.pk}/router/", {"router": router.pk}, content_type="application/json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["router"] == {"id": router.pk, "name": "gw", "kind": "haproxy"}
    assert "haproxy_address" not in response.content.decode()
    assert AuditEntry.objects.filter(plan=plan, action="router_choose").count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "named"), [({"router": 999999}, "router"), ({"router": None, "workload": 999}, "999")]
)
def test_an_unknown_router_or_workload_is_refused_by_name_and_nothing_changes(
    client_as, users, body, named
):
    plan = plan_for_access()
    response = client_as("operator").post(
        f"/api/v1/plans/{plan.pk}/router/", body, content_type="application/json"
    )
    assert response.status_code in (400, 409) and named in response.content.decode()
    assert MigrationPlan.objects.get(pk=plan.pk).version == plan.version
    assert not AuditEntry.objects.filter(plan=plan, action="router_choose").exists()


@pytest.mark.django_db
def test_the_plan_page_shows_the_router_and_confirmed_shares(client_as, users):
    plan = plan_for_access()
    router = _router("edge-gw")
    client_as("operator").post(f"/migrations/{plan.pk}/router/", {"router": router.pk})
    page = client_as("customer").get(f"/migrations/{plan.pk}/").content.decode()
    assert "Traffic routing" in page and "edge-gw" in page and "not confirmed" in page
    assert "/nowhere.sock" not in page  # a router's address is never shown
