"""Authoring plans without a superuser (page and API), and the admin for operators/approvers."""

from __future__ import annotations

import pytest

from accounts.services.roles import ROLE_APPROVER, ROLE_CUSTOMER, ROLE_OPERATOR, roles_ensure
from rollout.models import Criterion, MigrationPlan, PlanState
from rollout.services.audit import Actor
from rollout.services.transitions import plan_start
from tests.access import PageAccessCases


class TestNewPlanPage(PageAccessCases):
    url = "/migrations/new/"
    allowed_roles = ("operator",)


def body(workloads, **extra) -> dict:
    return {
        "tenant": "acme",
        "name": "move-acme",
        "source_cluster": "old",
        "target_cluster": "uni",
        "pilot": [workloads["legacy:acme-batch"].pk],
        "gray": [workloads["legacy:acme-chat"].pk],
        **extra,
    }


def test_an_operator_posts_a_plan_and_every_gate_gets_template_criteria(client_as, workloads):
    chat = workloads["legacy:acme-chat"]
    chat.slo_ttft_ms, chat.slo_tpot_ms = 800, 50
    chat.save()
    response = client_as("operator").post(
        "/api/v1/plans/", body(workloads, gray_steps=[10, 100]), content_type="application/json"
    )
    assert response.status_code == 201, response.content
    plan = MigrationPlan.objects.get(name="move-acme")
    assert (plan.gray_steps, plan.state, response.json()["id"]) == ([10, 100], "draft", plan.pk)
    gray = {c.name: c for c in Criterion.objects.filter(phase__plan=plan, phase__kind="gray")}
    assert gray["acme-chat-ttft-p99"].threshold == pytest.approx(0.8)
    assert gray["acme-chat-tpot-p99"].threshold == pytest.approx(0.05)
    assert gray["acme-chat-ttft-p99"].metric == "serving_ttft_seconds"
    assert gray["acme-chat-errors"].metric == "serving_error_ratio"
    assert {c.phase.kind for c in Criterion.objects.filter(phase__plan=plan)} == {
        "pilot",
        "gray",
        "full",
    }
    # With criteria on every gate the plan starts
    plan_start(plan_id=plan.pk, actor=Actor(plan.created_by))
    plan.refresh_from_db()
    assert plan.state == PlanState.RUNNING


def test_edited_criteria_replace_the_templates_and_a_gate_left_without_any_cannot_start(
    client_as, workloads
):
    from rollout.services.errors import WorkflowConflict

    only_pilot = [
        {
            "phase": "pilot",
            "name": "batch-latency",
            "metric": "inference_latency_p99_seconds",
            "entity_key": "acme-batch",
            "aggregation": "p99",
            "comparator": "le",
            "threshold": 2.0,
        }
    ]
    response = client_as("operator").post(
        "/api/v1/plans/", body(workloads, criteria=only_pilot), content_type="application/json"
    )
    assert response.status_code == 201, response.content
    plan = MigrationPlan.objects.get(name="move-acme")
    assert list(Criterion.objects.filter(phase__plan=plan).values_list("name", flat=True)) == [
        "batch-latency"
    ]
    with pytest.raises(WorkflowConflict, match="gray, full"):
        plan_start(plan_id=plan.pk, actor=Actor(plan.created_by))


def test_a_core_workload_in_the_pilot_is_a_400_naming_it(client_as, workloads):
    response = client_as("operator").post(
        "/api/v1/plans/",
        body(workloads, pilot=[workloads["legacy:acme-chat"].pk], gray=[]),
        content_type="application/json",
    )
    assert response.status_code == 400 and "acme-chat" in response.content.decode()
    assert not MigrationPlan.objects.exists()


@pytest.mark.parametrize("role", ["approver", "customer"])
def test_only_operators_author_plans(client_as, workloads, role):
    response = client_as(role).post(
        "/api/v1/plans/", body(workloads), content_type="application/json"
    )
    assert response.status_code == 403
    assert client_as(role).get("/migrations/new/").status_code == 403
    assert not MigrationPlan.objects.exists()


def test_the_page_lists_the_chosen_tenants_workloads_and_creates_a_draft(
    client_as, workloads, clusters, tenants
):
    client = client_as("operator")
    query = f"?tenant={tenants['acme'].pk}&source_cluster={clusters['legacy'].pk}"
    page = client.get("/migrations/new/" + query).content.decode()
    from tests.rollout.test_authoring_defaults import offered

    # the source's workloads of the tenant; the target's are not moved
    assert offered(page) == {workloads["legacy:acme-batch"].pk, workloads["legacy:acme-chat"].pk}
    response = client.post(
        "/migrations/new/",
        {
            "tenant": workloads["legacy:acme-batch"].tenant_id,
            "name": "from-the-page",
            "source_cluster": clusters["legacy"].pk,
            "target_cluster": clusters["unified"].pk,
            "pilot": [workloads["legacy:acme-batch"].pk],
            "gray": [workloads["legacy:acme-chat"].pk],
            "gray_steps": "5, 25, 50, 100",
            "interval_seconds": 30,
            "count": 4,
            "required_approvals": 2,
        },
    )
    plan = MigrationPlan.objects.get(name="from-the-page")
    assert response.status_code == 302 and response["Location"] == f"/migrations/{plan.pk}/"
    assert set(
        Criterion.objects.filter(phase__plan=plan).values_list("interval_seconds", "count")
    ) == {(30, 4)}


# --- the admin for operators and approvers ----------------------------------------------------


def test_migrate_gives_the_groups_model_permissions(db):
    groups = roles_ensure()

    def perms(role):
        return {
            f"{p.content_type.app_label}.{p.codename}"
            for p in groups[role].permissions.select_related("content_type")
        }

    operator = perms(ROLE_OPERATOR)
    assert {
        "telemetry.add_exportertarget",
        "alerts.change_alertrule",
        "rollout.add_criterion",
        "rollout.add_migrationplan",
        "inventory.change_workload",
        "simulation.change_twinrun",
    } <= operator
    approver = perms(ROLE_APPROVER)
    assert {"rollout.view_gate", "rollout.view_analysisrun", "rollout.view_migrationplan"} <= (
        approver
    )
    assert not {p for p in approver if not p.startswith(("rollout.view_", "monitoring."))}
    assert perms(ROLE_CUSTOMER) == set()


@pytest.mark.parametrize(
    ("role", "url"),
    [
        ("operator", "/admin/telemetry/exportertarget/add/"),
        ("operator", "/admin/alerts/alertrule/add/"),
        ("operator", "/admin/rollout/criterion/"),
        ("approver", "/admin/rollout/gate/"),
        ("approver", "/admin/rollout/analysisrun/"),
    ],
)
def test_operators_and_approvers_use_the_admin_without_403(client_as, role, url):
    assert client_as(role).get(url).status_code == 200


def test_the_admin_gate_page_shows_criteria_measurements_and_the_audit_trail(
    client_as, plan_factory, users, clusters
):
    from rollout.models import AnalysisRun
    from rollout.services.analysis import analysis_run_step
    from tests.rollout.conftest import write

    plan = plan_factory(criteria={kind: [{"count": 2}] for kind in ("pilot", "gray", "full")})
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    run = AnalysisRun.objects.get()
    from datetime import timedelta

    write(clusters["unified"], "acme-chat", run.traffic_at + timedelta(seconds=5), 0.25)
    analysis_run_step(run_id=run.pk, now=run.traffic_at + timedelta(seconds=30))
    page = client_as("approver").get(f"/admin/rollout/gate/{run.gate_id}/change/").content.decode()
    assert "p99(inference_latency_p99_seconds[acme-chat #" in page
    assert "0.2500" in page and "holds" in page  # the measured value and why
    assert "start" in page and "op" in page  # the audit trail: who started it
    assert 'name="_save"' not in page  # read-only
