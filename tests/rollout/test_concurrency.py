"""Concurrent commands on one gate: exactly one transition wins, the rest get a conflict."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections

from rollout.models import AuditEntry, PlanState
from rollout.services.audit import Actor
from rollout.services.errors import WorkflowConflict
from rollout.services.transitions import gate_approve, plan_promote, plan_start
from tests.rollout.conftest import rev

THREADS = 6


def run_at_once(calls) -> list[str]:
    barrier = threading.Barrier(len(calls))
    results: list[str] = [""] * len(calls)

    def worker(i, call):
        try:
            barrier.wait()
            call()
            results[i] = "ok"
        except WorkflowConflict:
            results[i] = "409"
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            results[i] = repr(exc)
        finally:
            connections.close_all()  # each thread had its own connection

    threads = [threading.Thread(target=worker, args=(i, c)) for i, c in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


@pytest.mark.django_db(transaction=True)
def test_concurrent_approvals_make_exactly_one_transition(plan_factory, users, approvers):
    plan = plan_factory(required_approvals=1)
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan_promote(plan_id=plan.pk, actor=Actor(users["operator"]))
    connection.close()
    extra = [approvers[i % len(approvers)] for i in range(THREADS)]
    calls = [
        (lambda who=who: gate_approve(plan_id=plan.pk, actor=Actor(who), revision=rev(plan)))
        for who in extra
    ]
    results = run_at_once(calls)
    assert sorted(results) == ["409"] * (THREADS - 1) + ["ok"], results
    plan.refresh_from_db()
    assert (plan.state, plan.current_phase) == (PlanState.RUNNING, "gray")
    transitions = AuditEntry.objects.filter(plan=plan, action="approve")
    assert transitions.count() == 1
    assert transitions.get().to_state == PlanState.RUNNING


@pytest.mark.django_db(transaction=True)
def test_concurrent_promotion_requests_make_exactly_one_transition(plan_factory, users):
    plan = plan_factory()
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    connection.close()
    calls = [
        (lambda: plan_promote(plan_id=plan.pk, actor=Actor(users["operator"])))
        for _ in range(THREADS)
    ]
    results = run_at_once(calls)
    assert sorted(results) == ["409"] * (THREADS - 1) + ["ok"], results
    assert AuditEntry.objects.filter(plan=plan, action="promote").count() == 1
