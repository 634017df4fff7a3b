"""Audit rows name the phase (and gray step) they touch (issue 30, item 7)."""

from __future__ import annotations

import csv
import io

import pytest

from rollout.models import AuditEntry, Criterion, PhaseKind
from rollout.services.audit import Actor
from rollout.services.criteria import criterion_delete, criterion_save
from rollout.services.transitions import gate_approve, plan_promote, plan_start
from tests.rollout.conftest import rev
from tests.rollout.test_flows import promote_and_approve


def _phases(plan) -> list[tuple[str, str | None, int | None]]:
    rows = plan.audit_entries.order_by("id").values_list("action", "phase", "gray_step_percent")
    return list(rows)


@pytest.mark.django_db
def test_each_transition_names_the_phase_and_step_it_touched(plan_factory, users):
    plan = plan_factory(gray_steps=[10, 100])
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    for _ in range(4):  # pilot, gray 10 %, gray 100 %, full
        promote_and_approve(plan, users)
    approvals = [(p, s) for action, p, s in _phases(plan) if action == "approve"]
    assert approvals == [("pilot", None), ("gray", 10), ("gray", 100), ("full", None)]
    start = [(p, s) for action, p, s in _phases(plan) if action == "start"]
    assert start == [("pilot", None)]
    labels = [e.phase_display for e in plan.audit_entries.filter(action="approve").order_by("id")]
    assert labels == ["pilot", "gray 10%", "gray 100%", "full"]


@pytest.mark.django_db
def test_a_deleted_criterion_still_names_its_phase(plan_factory, users):
    plan = plan_factory(gray_steps=[100])
    phase = plan.phases.get(kind=PhaseKind.GRAY)
    criterion = criterion_save(
        criterion=Criterion(
            phase=phase, name="p99", metric="inference_ttft_p99_seconds",
            entity_kind="workload", entity_key="acme-chat", aggregation="mean",
            comparator="le", threshold=1.0, window_seconds=60, count=1,
            interval_seconds=30, min_samples=1,
        ),
        actor=Actor(users["operator"]),
    )  # fmt: skip
    criterion_delete(criterion=criterion, actor=Actor(users["operator"]))
    row = AuditEntry.objects.filter(action="criterion_delete").get()
    assert (row.phase, row.gray_step_percent) == ("gray", None)


@pytest.mark.django_db
def test_the_audit_page_api_and_csv_show_the_phase(plan_factory, users, client_as):
    plan = plan_factory(gray_steps=[50, 100])
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    promote_and_approve(plan, users)
    plan_promote(plan_id=plan.pk, actor=Actor(users["operator"]))
    gate_approve(plan_id=plan.pk, actor=Actor(users["approver"]), revision=rev(plan))
    page = client_as("operator").get(f"/migrations/audit/?plan={plan.pk}").content.decode()
    assert "gray 50%" in page and "<th>Phase</th>" in page
    detail = client_as("operator").get(f"/migrations/{plan.pk}/").content.decode()
    assert "gray 50%" in detail
    rows = list(
        csv.DictReader(
            io.StringIO(
                client_as("operator")
                .get(f"/migrations/audit/?plan={plan.pk}&format=csv")
                .content.decode()
            )
        )
    )
    assert {(r["action"], r["phase"], r["gray_step_percent"]) for r in rows} >= {
        ("approve", "pilot", ""),
        ("approve", "gray", "50"),
    }
    api = client_as("operator").get(f"/api/v1/plans/{plan.pk}/audit/").json()
    entries = api.get("results", api)
    assert {(e["action"], e["phase"], e["gray_step_percent"]) for e in entries} >= {
        ("approve", "gray", 50)
    }
