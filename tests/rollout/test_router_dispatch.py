"""Router calls leave the transition's transaction: the transition commits an intent, the
router is asked holding no lock, its read-back is committed after; a worker lost in between
leaves an intent the beat sends again (harmlessly) or reports."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone

from rollout.models import GateState, MigrationPlan, PlanState, RouterCall
from rollout.services import router_dispatch, transitions
from rollout.services.audit import Actor
from rollout.services.commands import plan_command
from rollout.services.router_dispatch import MAX_DISPATCHES, router_intents_sweep
from rollout.services.transitions import plan_abort
from tests.rollout.conftest import rev
from tests.rollout.test_router_flows import routed_plan, to_gray


def _lost_worker(monkeypatch) -> None:
    """The transition commits, then its worker dies before sending anything."""
    monkeypatch.setattr(transitions, "router_intents_dispatch", lambda *a, **k: 0)


def test_a_transition_commits_an_intent_and_only_then_is_the_router_asked(
    plan_factory, users, haproxy, haproxy_router, monkeypatch
):
    plan, item = routed_plan(plan_factory, haproxy_router, criteria={"gray": [{}]})
    plan_command(command="start", plan_id=plan.pk, actor=Actor(users["operator"]))
    _lost_worker(monkeypatch)
    op, appr = Actor(users["operator"]), Actor(users["approver"])
    plan_command(command="promote", plan_id=plan.pk, actor=op)
    plan_command(command="approve", plan_id=plan.pk, actor=appr, revision=rev(plan))
    plan.refresh_from_db()
    call = RouterCall.objects.get(plan_workload=item, desired_share=5)
    # Committed: the plan is on its step, the router not asked, no analysis clock running
    assert (plan.state, call.outcome, call.attempts) == (PlanState.RUNNING, "intended", 0)
    assert haproxy.weight("canary") == 0
    assert not plan.current_gate.runs.exists()
    # The beat sends it: confirmed by read-back, the clock starts there
    assert router_intents_sweep() == 1
    call.refresh_from_db()
    assert (call.outcome, call.attempts, haproxy.weight("canary")) == ("confirmed", 1, 5)
    run = plan.current_gate.runs.get()
    assert run.traffic_at == call.confirmed_at
    assert router_intents_sweep() == 0  # exactly once: nothing left to send


def test_a_claim_that_lapsed_is_sent_again_and_confirmed_once(
    plan_factory, users, haproxy, haproxy_router, monkeypatch
):
    plan, item = routed_plan(plan_factory, haproxy_router)
    plan = to_gray(plan, users)
    _lost_worker(monkeypatch)
    plan_abort(plan_id=plan.pk, actor=Actor(users["operator"]), reason="stop")
    call = RouterCall.objects.get(operation="restore")
    # A worker claimed it and died mid-call (perhaps after HAProxy applied the weights)
    haproxy.command("set server llm/canary weight 0; set server llm/baseline weight 100")
    RouterCall.objects.filter(pk=call.pk).update(
        attempts=1, claimed_until=timezone.now() + timedelta(seconds=60)
    )
    assert router_intents_sweep() == 0  # its claim still holds: nobody sends it twice
    RouterCall.objects.filter(pk=call.pk).update(claimed_until=timezone.now())
    assert router_intents_sweep() == 1
    call.refresh_from_db()
    plan.refresh_from_db()
    assert (call.outcome, call.attempts) == ("confirmed", 2)
    assert plan.state == PlanState.ABORTED
    assert plan.audit_entries.filter(action="router_confirmed", to_state="aborted").count() == 1


def test_an_intent_lost_too_often_is_reported_and_the_step_pauses(
    plan_factory, users, haproxy, haproxy_router, monkeypatch
):
    plan, item = routed_plan(plan_factory, haproxy_router, criteria={"gray": [{}]})
    plan_command(command="start", plan_id=plan.pk, actor=Actor(users["operator"]))
    _lost_worker(monkeypatch)
    op, appr = Actor(users["operator"]), Actor(users["approver"])
    plan_command(command="promote", plan_id=plan.pk, actor=op)
    plan_command(command="approve", plan_id=plan.pk, actor=appr, revision=rev(plan))
    RouterCall.objects.filter(outcome="intended").update(attempts=MAX_DISPATCHES)
    assert router_intents_sweep() == 0
    plan.refresh_from_db()
    assert plan.state == PlanState.PAUSED
    assert plan.current_gate.state == GateState.TRAFFIC_UNCONFIRMED
    row = plan.audit_entries.filter(to_state=PlanState.PAUSED).get()
    assert row.reason_data["params"]["outcome"] == "timeout"
    assert "stopped mid-call" in row.reason
    assert haproxy.weight("canary") == 0  # never promoted


def test_a_lost_restore_that_cannot_be_confirmed_alerts_as_rollback_unconfirmed(
    plan_factory, users, haproxy, haproxy_router, monkeypatch
):
    from rollout.models import WebhookDelivery, WebhookSubscription

    WebhookSubscription.objects.create(
        name="pager", url="https://pager.example/hook", events=["rollback_unconfirmed"], secret="s"
    )
    plan, _item = routed_plan(plan_factory, haproxy_router)
    plan = to_gray(plan, users)
    _lost_worker(monkeypatch)
    plan_abort(plan_id=plan.pk, actor=Actor(users["operator"]), reason="stop")
    plan.refresh_from_db()
    assert plan.state == PlanState.ROLLBACK_UNCONFIRMED
    assert not WebhookDelivery.objects.filter(event="rollback_unconfirmed").exists()
    haproxy.stop()
    router_intents_sweep()
    plan.refresh_from_db()
    assert plan.state == PlanState.ROLLBACK_UNCONFIRMED and plan.resume_state == "aborted"
    assert WebhookDelivery.objects.filter(event="rollback_unconfirmed").count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_slow_router_holds_no_lock_on_the_plan(
    plan_factory, users, haproxy, haproxy_router, monkeypatch
):
    plan, _item = routed_plan(plan_factory, haproxy_router)
    plan = to_gray(plan, users)
    real_send = router_dispatch.router_send
    seen: dict[str, object] = {}

    def slow_send(call, config):
        # While the router "works", another session locks the plan row without waiting.
        def other_session() -> None:
            try:
                from django.db import transaction

                with transaction.atomic():
                    MigrationPlan.objects.select_for_update(nowait=True).get(pk=plan.pk)
                seen["locked"] = True
            except Exception as exc:  # noqa: BLE001 - reported by the assertion below
                seen["locked"] = repr(exc)
            finally:
                connections.close_all()

        thread = threading.Thread(target=other_session)
        thread.start()
        thread.join(30)
        return real_send(call, config)

    monkeypatch.setattr(router_dispatch, "router_send", slow_send)
    plan_abort(plan_id=plan.pk, actor=Actor(users["operator"]), reason="stop")
    assert seen["locked"] is True, seen
    plan.refresh_from_db()
    assert plan.state == PlanState.ABORTED and haproxy.weight("canary") == 0


def test_a_step_paused_while_its_router_was_asked_starts_its_clock_at_the_read_back(
    plan_factory, users, haproxy, haproxy_router, monkeypatch
):
    from rollout.services.transitions import plan_pause, plan_resume

    plan, item = routed_plan(plan_factory, haproxy_router, criteria={"gray": [{}]})
    plan_command(command="start", plan_id=plan.pk, actor=Actor(users["operator"]))
    _lost_worker(monkeypatch)
    op, appr = Actor(users["operator"]), Actor(users["approver"])
    plan_command(command="promote", plan_id=plan.pk, actor=op)
    plan_command(command="approve", plan_id=plan.pk, actor=appr, revision=rev(plan))
    plan_pause(plan_id=plan.pk, actor=op, reason="look first")
    assert router_intents_sweep() == 1  # HAProxy answers while the plan is paused
    call = RouterCall.objects.get(plan_workload=item, desired_share=5)
    plan_resume(plan_id=plan.pk, actor=op)
    plan.refresh_from_db()
    assert plan.state == PlanState.RUNNING
    assert plan.current_gate.runs.get().traffic_at == call.confirmed_at


def test_a_skipped_gate_gets_no_analysis_when_its_router_answers_late(
    plan_factory, users, haproxy, haproxy_router, monkeypatch
):
    from rollout.services.transitions import gate_skip

    plan, _item = routed_plan(plan_factory, haproxy_router, criteria={"gray": [{}]})
    plan_command(command="start", plan_id=plan.pk, actor=Actor(users["operator"]))
    _lost_worker(monkeypatch)
    op, appr = Actor(users["operator"]), Actor(users["approver"])
    plan_command(command="promote", plan_id=plan.pk, actor=op)
    plan_command(command="approve", plan_id=plan.pk, actor=appr, revision=rev(plan))
    gate_skip(plan_id=plan.pk, actor=op, reason="known good")
    router_intents_sweep()
    plan.refresh_from_db()
    assert plan.current_gate.state == GateState.PASSED
    assert not plan.current_gate.runs.exists()
