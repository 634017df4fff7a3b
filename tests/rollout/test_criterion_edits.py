"""Editing criteria: a move between phases is a change of both gates (issue 26 §4)."""

from __future__ import annotations

import pytest

from rollout.models import AuditEntry, PhaseKind
from rollout.services.audit import Actor
from rollout.services.criteria import criterion_save, criterion_save_check
from rollout.services.errors import WorkflowConflict

pytestmark = pytest.mark.django_db


def test_moving_a_draft_plans_criterion_audits_the_plan_it_leaves_and_the_one_it_joins(
    plan_factory, users
):
    plan_a = plan_factory(criteria={PhaseKind.PILOT: [{}]})
    plan_b = plan_factory(criteria={PhaseKind.GRAY: [{"name": "b"}]})
    criterion = plan_a.phases.get(kind=PhaseKind.PILOT).criteria.get()
    criterion.phase = plan_b.phases.get(kind=PhaseKind.PILOT)
    criterion_save(criterion=criterion, actor=Actor(users["operator"]))  # drafts: allowed
    left = AuditEntry.objects.get(plan=plan_a, action="criterion_move")
    assert f"moved to {plan_b.name} / pilot" in left.reason
    assert AuditEntry.objects.filter(plan=plan_b, action="criterion_change").exists()


def test_the_check_names_the_gate_a_move_would_strip(plan_factory, users):
    from rollout.services.transitions import plan_start

    plan_a = plan_factory(criteria={PhaseKind.PILOT: [{}]})
    plan_start(plan_id=plan_a.pk, actor=Actor(users["operator"]))
    plan_b = plan_factory(criteria={PhaseKind.PILOT: [{"name": "b"}]})
    criterion = plan_a.phases.get(kind=PhaseKind.PILOT).criteria.get()
    assert criterion_save_check(criterion=criterion) is None  # not moving: nothing to say
    criterion.phase = plan_b.phases.get(kind=PhaseKind.GRAY)
    with pytest.raises(WorkflowConflict, match=f"{plan_a.name}'s pilot gate"):
        criterion_save_check(criterion=criterion)
