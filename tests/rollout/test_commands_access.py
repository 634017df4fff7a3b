"""Access checks for the migration commands (POST), on the API and the detail page.

A plan belongs to a tenant: another tenant's customer gets 404 for any command on it, before
anything is checked or audited. On the API a refused command is a 403; the page answers every
role of the plan's tenant with a redirect and a message (and the service audits the denial),
so there the mixin checks that the role reached the command and the tests below that nothing
moved.
"""

from __future__ import annotations

import pytest

from rollout.models import AuditEntry, MigrationPlan, PlanState
from tests.access import ApiAccessCases, PageAccessCases
from tests.rollout.conftest import plan_for_access


class TestPlanCommandApi(ApiAccessCases):
    route = "rollout-api:plan-command"
    method = "post"
    allowed_roles = ("operator",)
    hidden_roles = ("other_customer",)

    def get_url(self, users) -> str:
        return f"/api/v1/plans/{plan_for_access().pk}/start/"

    def other_tenant_url(self, users, tenants) -> str:
        return f"/api/v1/plans/{plan_for_access('panda').pk}/start/"


class TestPlanOverrideApi(ApiAccessCases):
    """The override is its own operation; only operators request it (then four-eyes)."""

    route = "rollout-api:plan-override"
    method = "post"
    content_type = "application/json"
    allowed_roles = ("operator",)
    hidden_roles = ("other_customer",)

    def post_data(self, users) -> dict:
        return {"reason": "known telemetry gap", "revision": 1}

    def get_url(self, users) -> str:
        return f"/api/v1/plans/{plan_for_access().pk}/override/"

    def other_tenant_url(self, users, tenants) -> str:
        return f"/api/v1/plans/{plan_for_access('panda').pk}/override/"


class TestPlanCommandPage(PageAccessCases):
    route = "migration-command"
    method = "post"
    allowed_roles = ("operator", "approver", "customer")
    hidden_roles = ("other_customer",)

    def get_url(self, users) -> str:
        return f"/migrations/{plan_for_access().pk}/start/"

    def other_tenant_url(self, users, tenants) -> str:
        return f"/migrations/{plan_for_access('panda').pk}/start/"


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["approver", "customer"])
def test_a_refused_page_command_moves_nothing_and_is_audited(client_as, users, role):
    plan = plan_for_access()
    response = client_as(role).post(f"/migrations/{plan.pk}/start/")
    assert response.status_code == 302
    plan.refresh_from_db()
    assert plan.state == PlanState.DRAFT
    assert AuditEntry.objects.filter(plan=plan, actor=users[role]).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("prefix", ["/api/v1/plans", "/migrations"])
def test_another_tenants_plan_is_untouched_and_unaudited(client_as, users, prefix):
    plan = plan_for_access("panda")
    audited = AuditEntry.objects.count()
    response = client_as("customer").post(f"{prefix}/{plan.pk}/abort/", {"comment": "x"})
    assert response.status_code == 404
    assert MigrationPlan.objects.get(pk=plan.pk).state == PlanState.DRAFT
    assert AuditEntry.objects.count() == audited
