"""REST API: access per role, tenant isolation (404), commands with 409 and 403."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from accounts.models import Tenant
from accounts.services.tokens import token_create
from rollout.models import AuditEntry, PlanState
from rollout.services.audit import Actor
from rollout.services.transitions import plan_promote, plan_start
from tests.access import ApiAccessCases

STAFF = ("operator", "approver")


@pytest.fixture
def plan(plan_factory):
    return plan_factory()


class TenantScopedApiCases(ApiAccessCases):
    """The mixin for a route under one plan of acme: a role outside the plan's tenant gets 404
    (not even a 403), and acme's customer gets 404 for panda's plan."""

    allowed_roles = (*STAFF, "customer")
    hidden_roles = ("other_customer",)
    path = ""

    def get_url(self, users) -> str:
        from rollout.models import MigrationPlan

        plan = MigrationPlan.objects.first()
        if plan is None:
            from tests.rollout.conftest import plan_for_access

            plan = plan_for_access()
        return self.path.format(pk=plan.pk)

    def other_tenant_url(self, users, tenants) -> str:
        from tests.rollout.conftest import plan_for_access

        return self.path.format(pk=plan_for_access("panda").pk)


class TestPlanListAccess(ApiAccessCases):
    url = "/api/v1/plans/"

    def list_markers(self, users, tenants) -> list[str]:
        from tests.rollout.conftest import plan_for_access

        plan_for_access("acme")
        return [plan_for_access("panda").name]


class TestAuditListAccess(ApiAccessCases):
    url = "/api/v1/migration-audit/"


class TestPlanDetailAccess(TenantScopedApiCases):
    route = "rollout-api:plan"
    path = "/api/v1/plans/{pk}/"


class TestPhasesAccess(TenantScopedApiCases):
    route = "rollout-api:plan-phases"
    path = "/api/v1/plans/{pk}/phases/"


class TestGatesAccess(TenantScopedApiCases):
    route = "rollout-api:plan-gates"
    path = "/api/v1/plans/{pk}/gates/"


class TestRunsAccess(TenantScopedApiCases):
    route = "rollout-api:plan-analysis-runs"
    path = "/api/v1/plans/{pk}/analysis-runs/"


class TestApprovalsAccess(TenantScopedApiCases):
    route = "rollout-api:plan-approvals"
    path = "/api/v1/plans/{pk}/approvals/"


class TestPlanAuditAccess(TenantScopedApiCases):
    route = "rollout-api:plan-audit"
    path = "/api/v1/plans/{pk}/audit/"


def post(client, plan, command, **body):
    return client.post(f"/api/v1/plans/{plan.pk}/{command}/", body, content_type="application/json")


def test_customers_see_only_their_tenants_plans(client_as, plan):
    assert [p["id"] for p in client_as("customer").get("/api/v1/plans/").json()["results"]] == [
        plan.pk
    ]
    assert client_as("other_customer").get("/api/v1/plans/").json()["results"] == []
    assert client_as("other_customer").get("/api/v1/migration-audit/").json()["results"] == []


@pytest.mark.parametrize("command", ["start", "approve", "abort"])
def test_another_tenants_customer_cannot_act_on_a_plan(client_as, plan, command):
    response = post(client_as("other_customer"), plan, command, reason="x")
    assert response.status_code == 404
    plan.refresh_from_db()
    assert plan.state == PlanState.DRAFT


def test_anonymous_commands_are_rejected(client, plan):
    assert post(client, plan, "start").status_code in (401, 403)


def test_own_customer_may_read_but_not_act(client_as, plan):
    response = post(client_as("customer"), plan, "start")
    assert response.status_code == 403
    assert AuditEntry.objects.filter(action="start_denied").count() == 1


def test_commands_walk_the_plan_and_illegal_ones_are_409(client_as, users, plan):
    operator = client_as("operator")
    response = post(operator, plan, "start")
    assert response.status_code == 200 and response.json()["state"] == "running"
    assert post(operator, plan, "start").status_code == 409
    assert post(operator, plan, "resume").status_code == 409
    version = response.json()["version"]
    assert post(operator, plan, "pause", expected_version=version - 1).status_code == 409
    assert post(operator, plan, "promote").status_code == 200
    # The requester is an operator without approve permission: 403, audited.
    assert post(operator, plan, "approve", revision=1).status_code == 403
    approver = client_as("approver")
    response = post(approver, plan, "approve", comment="numbers fine", revision=1)
    assert response.status_code == 200
    assert (response.json()["current_phase"], response.json()["gray_step_percent"]) == ("gray", 5)
    # nothing awaits approval
    assert post(approver, plan, "reject", reason="x", revision=1).status_code == 409


def test_requesters_own_approval_is_403_and_audited(client, users, plan):
    boss = type(users["operator"]).objects.create_superuser("boss", password="x")
    client.force_login(boss)
    assert post(client, plan, "start").status_code == 200
    assert post(client, plan, "promote").status_code == 200
    response = post(client, plan, "approve", revision=1)
    assert response.status_code == 403 and "four-eyes" in response.json()["detail"]
    denied = AuditEntry.objects.get(action="approve_denied")
    assert denied.source_ip == "127.0.0.1" and denied.actor == boss


def test_an_approve_scoped_token_approves_for_its_approver(plan, users):
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan_promote(plan_id=plan.pk, actor=Actor(users["operator"]))
    client = APIClient()
    issued = token_create(name="ci", scopes=["approve"], owner=users["approver"])
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")
    assert post(client, plan, "approve").status_code == 400  # no revision named
    assert post(client, plan, "approve", revision=1).status_code == 200
    from rollout.models import Approval

    approval = Approval.objects.get(gate__plan=plan)
    assert approval.user == users["approver"] and "token:ci" in approval.principal
    assert post(client, plan, "start").status_code == 403  # approve scope only
    reader = APIClient()
    reader.credentials(
        HTTP_AUTHORIZATION=f"Bearer {token_create(name='r', scopes=['read']).plaintext}"
    )
    assert post(reader, plan, "abort", reason="x").status_code == 403


def test_a_tenant_bound_token_gets_404_for_other_tenants(plan):
    panda = Tenant.objects.get(slug="panda")
    client = APIClient()
    issued = token_create(name="panda", scopes=["read", "approve"], tenant=panda)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")
    assert client.get(f"/api/v1/plans/{plan.pk}/").status_code == 404
    assert post(client, plan, "approve").status_code == 404


def test_runs_show_measurements_and_audit_filters(client_as, users, plan_factory, clusters):
    from rollout.models import PhaseKind
    from rollout.services.analysis import analysis_run_step
    from tests.rollout.conftest import at, write

    plan = plan_factory(criteria={PhaseKind.PILOT: [{"count": 2}]})
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    write(clusters["unified"], "acme-chat", at(-5), 0.3)
    analysis_run_step(run_id=plan.gates.get().runs.get().pk, now=at(0))
    runs = client_as("customer").get(f"/api/v1/plans/{plan.pk}/analysis-runs/").json()
    measurement = runs["results"][0]["metrics"][0]["measurements"][0]
    assert measurement["outcome"] == "successful" and measurement["value"] == pytest.approx(0.3)
    audit = client_as("operator").get(f"/api/v1/migration-audit/?plan={plan.pk}&action=start")
    assert [row["action"] for row in audit.json()["results"]] == ["start"]
    assert client_as("operator").get("/api/v1/plans/?state=bogus").status_code == 400
