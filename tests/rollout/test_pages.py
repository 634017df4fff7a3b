"""Migration pages: access per role, tenant isolation, the detail's content, commands, CSV."""

from __future__ import annotations

import pytest

from rollout.models import AuditEntry, AuditImmutable, PhaseKind, PlanState
from rollout.services.analysis import analysis_run_step
from rollout.services.audit import Actor
from rollout.services.transitions import plan_start
from tests.access import PageAccessCases
from tests.rollout.conftest import at, plan_for_access, write


class TestPlanListPage(PageAccessCases):
    url = "/migrations/"

    def list_markers(self, users, tenants) -> list[str]:
        plan_for_access("acme")
        return [plan_for_access("panda").name]


class TestAuditPage(PageAccessCases):
    url = "/migrations/audit/"
    allowed_roles = ("operator", "approver")


class TestWebhookDeliveriesPage(PageAccessCases):
    url = "/migrations/webhooks/"
    allowed_roles = ("operator",)


class TestPlanDetailPage(PageAccessCases):
    # Tenant isolation: another tenant's customer is told nothing exists (404).
    route = "migration-plan"
    hidden_roles = ("other_customer",)

    def get_url(self, users) -> str:
        return f"/migrations/{plan_for_access().pk}/"

    def other_tenant_url(self, users, tenants) -> str:
        return f"/migrations/{plan_for_access('panda').pk}/"


def test_detail_shows_timeline_criteria_and_every_measurement(
    client_as, users, plan_factory, clusters
):
    plan = plan_factory(criteria={PhaseKind.PILOT: [{"count": 2}]})
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    write(clusters["unified"], "acme-chat", at(-5), 0.25)
    analysis_run_step(run_id=plan.gates.get().runs.get().pk, now=at(0))
    page = client_as("customer").get(f"/migrations/{plan.pk}/").content.decode()
    chat = plan.phases.get(kind="pilot").criteria.get().workload
    # The workload by name and identity (names repeat across clusters and tenants).
    assert f"p99(inference_latency_p99_seconds[acme-chat #{chat.pk}], 60s) ≤ 1" in page
    # value and threshold in the metric's unit (seconds), and why
    assert "250 ms" in page and ">1 s<" in page and "holds" in page
    assert "planned" in page and "acme-batch" in page
    assert 'formaction="/migrations/' not in page  # customers read only
    operator_page = client_as("operator").get(f"/migrations/{plan.pk}/").content.decode()
    assert "/skip/" in operator_page and "/abort/" in operator_page


def test_page_commands_run_the_services_and_report_conflicts(client_as, plan_factory):
    plan = plan_factory()
    operator = client_as("operator")
    response = operator.post(f"/migrations/{plan.pk}/start/", {"version": plan.version})
    assert response.status_code == 302
    plan.refresh_from_db()
    assert plan.state == PlanState.RUNNING
    response = operator.post(f"/migrations/{plan.pk}/start/", follow=True)
    assert "Not done" in response.content.decode()
    assert client_as("customer").post(f"/migrations/{plan.pk}/abort/").status_code == 302
    plan.refresh_from_db()
    assert plan.state == PlanState.RUNNING  # the customer's attempt was refused …
    assert AuditEntry.objects.filter(action="abort_denied").exists()  # … and audited
    assert client_as("other_customer").post(f"/migrations/{plan.pk}/abort/").status_code == 404


def test_audit_csv_export_and_rows_are_append_only(client_as, plan_factory):
    plan_factory()
    response = client_as("approver").get("/migrations/audit/?format=csv")
    lines = response.content.decode().splitlines()
    assert lines[0].startswith("id,at,actor,action") and ",create," in lines[-1]
    entry = AuditEntry.objects.get(action="create")
    entry.reason = "rewritten"
    with pytest.raises(AuditImmutable):
        entry.save()
    with pytest.raises(AuditImmutable):
        entry.delete()


def test_the_admin_offers_no_audit_edit_and_approves_through_the_service(
    client, users, plan_factory, approvers
):
    from accounts.models import User

    plan = plan_factory()
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    from rollout.services.transitions import plan_promote

    plan_promote(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan.refresh_from_db()
    admin = User.objects.create_superuser("admin", password="x")
    client.force_login(admin)
    entry = AuditEntry.objects.first()
    assert client.get(f"/admin/rollout/auditentry/{entry.pk}/delete/").status_code == 403
    assert client.get("/admin/rollout/auditentry/add/").status_code == 403
    client.force_login(approvers[1])
    gate = plan.current_gate
    # The desk posts what the approver saw: the gate revision and the plan version.
    response = client.post(
        f"/admin/rollout/gate/{gate.pk}/decide/",
        {
            "command": "approve",
            "revision": gate.revision,
            "expected_version": plan.version,
            "reason": "ok",
        },
    )
    assert response.status_code == 302
    plan.refresh_from_db()
    assert plan.current_phase == "gray"
    assert AuditEntry.objects.filter(action="approve", actor=approvers[1]).count() == 1
