# ruff: noqa: F811 (the report fixture imported from test_report is used as an argument)
"""The validation report lists the moves promoted past an analysis that did not pass
(issue 30, item 6: overrides are explicit in the audit *and* the report)."""

from __future__ import annotations

import pytest

from inventory.models import Workload
from rollout.models import Gate, MigrationPlan, PhaseKind
from rollout.services.audit import Actor
from rollout.services.criteria import phase_manual_gate_set
from rollout.services.overrides import plan_override
from rollout.services.plans import plan_create
from rollout.services.transitions import gate_approve, plan_start
from tests.dashboards.test_report import pair  # noqa: F401 - fixture used below
from tests.rollout.conftest import rev


def _overridden_plan(pair, tenants, users) -> MigrationPlan:
    """A plan legacy → uni whose pilot gate is promoted past an Inconclusive analysis."""
    workload = Workload.objects.filter(cluster=pair["base"], name="svc-a").get()
    Workload.objects.filter(pk=workload.pk).update(criticality=Workload.Criticality.NON_CORE)
    plan = plan_create(
        tenant=tenants["acme"],
        name="move svc-a",
        source_cluster=pair["base"],
        target_cluster=pair["uni"],
        workloads={PhaseKind.PILOT: [workload]},
        actor=Actor(users["operator"]),
        required_approvals=1,
    )
    for phase in plan.phases.all():
        phase_manual_gate_set(phase=phase, manual=True, actor=Actor(users["operator"]), reason="t")
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    # The pilot's analysis came back Inconclusive (what the analysis task writes on no data).
    gate = plan.gates.get()
    Gate.objects.filter(pk=gate.pk).update(state="inconclusive")
    MigrationPlan.objects.filter(pk=plan.pk).update(state="paused")
    plan_override(
        plan_id=plan.pk,
        actor=Actor(users["operator"]),
        reason="exporter gap during the pilot",
        revision=rev(plan),
    )
    gate_approve(plan_id=plan.pk, actor=Actor(users["approver"]), revision=rev(plan))
    return plan


@pytest.mark.django_db
def test_the_report_lists_an_overridden_gate_with_its_reason_and_approvals(
    pair, tenants, users, client_as
):
    url = f"/report/?baseline={pair['base'].pk}&unified={pair['uni'].pk}"
    before = client_as("operator").get(url).content.decode()
    assert "data-no-overrides" in before
    plan = _overridden_plan(pair, tenants, users)
    page = client_as("operator").get(url).content.decode()
    assert "data-overrides" in page and "data-no-overrides" not in page
    assert "move svc-a" in page and "exporter gap during the pilot" in page
    assert f'href="/migrations/{plan.pk}/"' in page
    assert "inconclusive" in page and "1 / 1" in page  # one approval, and it said override
    api = client_as("operator").get("/api/v1/report/?baseline=legacy&unified=uni").json()
    assert api["overrides"] == [
        {
            "plan": plan.pk,
            "plan_name": "move svc-a",
            "gate": "pilot",
            "analysis_overridden": "inconclusive",
            "reason": "exporter gap during the pilot",
            "override_approvals": 1,
            "approvals_required": 1,
            "gate_state": Gate.objects.get(plan=plan, phase__kind="pilot").state,
        }
    ]
