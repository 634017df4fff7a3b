"""Plans moving real traffic through HAProxy: the clock starts at the read-back, a router that
fails pauses the plan by reason code, a rollback is verified or "rollback unconfirmed"."""

from __future__ import annotations

import pytest

from rollout.models import (
    AuditEntry,
    GateState,
    PlanState,
    RouterCall,
    TrafficRouter,
    WebhookDelivery,
    WebhookSubscription,
)
from rollout.services.audit import Actor
from rollout.services.commands import plan_command
from rollout.services.errors import WorkflowConflict
from rollout.services.transitions import plan_abort, plan_retry, plan_start
from tests.rollout.conftest import rev


def routed_plan(plan_factory, router, **kwargs):
    """A plan whose gray workload (acme-chat) moves through ``router``; the pilot's on the twin."""
    plan = plan_factory(**kwargs)
    item = plan.workloads.get(workload__name="acme-chat")
    item.router = router
    item.save(update_fields=["router"])
    return plan, item


def to_gray(plan, users):
    op = Actor(users["operator"])
    plan_start(plan_id=plan.pk, actor=op)
    plan_command(command="promote", plan_id=plan.pk, actor=op)
    plan_command(
        command="approve", plan_id=plan.pk, actor=Actor(users["approver"]), revision=rev(plan)
    )
    plan.refresh_from_db()
    return plan


def test_each_gray_step_sets_haproxy_weights_and_confirms_them(
    plan_factory, users, haproxy, haproxy_router
):
    plan, item = routed_plan(plan_factory, haproxy_router, gray_steps=[5, 25, 100])
    plan = to_gray(plan, users)
    assert (plan.state, plan.current_step_percent) == (PlanState.RUNNING, 5)
    assert (haproxy.weight("canary"), haproxy.weight("baseline")) == (5, 95)
    item.refresh_from_db()
    assert item.confirmed_share == pytest.approx(0.05)
    # The call is logged and audited: who, which share, what HAProxy answered
    call = RouterCall.objects.filter(plan_workload=item, desired_share=5).get()
    assert (call.outcome, call.confirmed_share) == ("confirmed", 5.0)
    assert call.actor_label == Actor(users["approver"]).label
    assert "canary=5" in call.answer
    audit = AuditEntry.objects.get(action="router_set", object_id=call.pk)
    assert audit.actor == users["approver"] and "5% asked, 5% confirmed" in audit.reason
    op, appr = Actor(users["operator"]), Actor(users["approver"])
    plan_command(command="promote", plan_id=plan.pk, actor=op)
    plan_command(command="approve", plan_id=plan.pk, actor=appr, revision=rev(plan))
    assert haproxy.weight("canary") == 25


def test_the_analysis_clock_starts_at_the_routers_confirmation(
    plan_factory, users, haproxy, haproxy_router
):
    plan, item = routed_plan(plan_factory, haproxy_router, criteria={"gray": [{}]})
    plan = to_gray(plan, users)
    item.refresh_from_db()
    run = plan.current_gate.runs.get()
    call = RouterCall.objects.filter(plan_workload=item, desired_share=5).get()
    assert run.traffic_at == call.confirmed_at == item.confirmed_at


def test_haproxy_down_pauses_the_plan_naming_the_router_error_and_nothing_is_promoted(
    plan_factory, users, haproxy, haproxy_router
):
    plan, item = routed_plan(plan_factory, haproxy_router, criteria={"gray": [{}]})
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    haproxy.stop()
    op = Actor(users["operator"])
    plan_command(command="promote", plan_id=plan.pk, actor=op)
    plan_command(
        command="approve", plan_id=plan.pk, actor=Actor(users["approver"]), revision=rev(plan)
    )
    plan.refresh_from_db()
    assert plan.state == PlanState.PAUSED
    assert plan.current_gate.state == GateState.TRAFFIC_UNCONFIRMED
    assert not plan.current_gate.runs.exists()  # no analysis of traffic that never moved
    row = plan.audit_entries.filter(to_state=PlanState.PAUSED).get()
    assert row.reason_data["code"] == "router_failed"
    assert row.reason_data["params"]["outcome"] == "unreachable"
    assert str(haproxy.socket) in row.reason
    item.refresh_from_db()
    assert item.confirmed_share is None
    # HAProxy back: retry pushes the share again and the step runs
    haproxy.start()
    plan_retry(plan_id=plan.pk, actor=op)
    plan.refresh_from_db()
    assert plan.state == PlanState.RUNNING and haproxy.weight("canary") == 5


def test_a_router_confirming_another_share_pauses_with_mismatch(
    plan_factory, users, haproxy, haproxy_router, monkeypatch
):
    from rollout.routers import haproxy as module

    plan, _item = routed_plan(plan_factory, haproxy_router)
    monkeypatch.setattr(module, "WEIGHT_SCALE", 50)  # a router that applies half the share
    plan = to_gray(plan, users)
    assert plan.state == PlanState.PAUSED
    row = plan.audit_entries.filter(to_state=PlanState.PAUSED).get()
    assert row.reason_data["params"]["outcome"] == "mismatch"
    assert "asked 5%, read back" in row.reason


def test_abort_sets_the_source_back_and_verifies_it(plan_factory, users, haproxy, haproxy_router):
    plan, _item = routed_plan(plan_factory, haproxy_router)
    plan = to_gray(plan, users)
    assert haproxy.weight("canary") == 5
    plan_abort(plan_id=plan.pk, actor=Actor(users["operator"]), reason="stop")
    plan.refresh_from_db()
    assert plan.state == PlanState.ABORTED
    assert (haproxy.weight("canary"), haproxy.weight("baseline")) == (0, 100)
    assert RouterCall.objects.filter(operation="restore", outcome="confirmed").exists()


def test_an_unverified_rollback_is_rollback_unconfirmed_and_alerts(
    plan_factory, users, haproxy, haproxy_router
):
    WebhookSubscription.objects.create(
        name="pager", url="https://pager.example/hook", events=["rollback_unconfirmed"], secret="s"
    )
    plan, _item = routed_plan(plan_factory, haproxy_router)
    plan = to_gray(plan, users)
    haproxy.stop()
    op = Actor(users["operator"])
    plan_abort(plan_id=plan.pk, actor=op, reason="stop")
    plan.refresh_from_db()
    assert plan.state == PlanState.ROLLBACK_UNCONFIRMED
    assert WebhookDelivery.objects.filter(event="rollback_unconfirmed").count() == 1
    # Still unreachable: verifying leaves it unconfirmed
    plan_command(command="verify-rollback", plan_id=plan.pk, actor=op)
    plan.refresh_from_db()
    assert plan.state == PlanState.ROLLBACK_UNCONFIRMED
    haproxy.start()  # starts again with its configured weights; move them as a stale gateway
    haproxy.command("set server llm/canary weight 5; set server llm/baseline weight 95")
    plan_command(command="verify-rollback", plan_id=plan.pk, actor=op)
    plan.refresh_from_db()
    assert plan.state == PlanState.ABORTED and haproxy.weight("canary") == 0


def test_one_haproxy_router_cannot_move_two_workloads(plan_factory, users, haproxy_router):
    plan = plan_factory()
    plan.router = haproxy_router
    plan.save(update_fields=["router"])
    with pytest.raises(
        WorkflowConflict, match="gateway-chat: acme-(chat, acme-batch|batch, acme-chat)"
    ):
        plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan.refresh_from_db()
    assert plan.state == PlanState.DRAFT and not RouterCall.objects.exists()


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"haproxy_backend": "bad name!"}, "haproxy_backend"),
        ({"haproxy_address": "nowhere"}, "haproxy_address"),
        ({"haproxy_target_server": "baseline"}, "haproxy_target_server"),
        ({"kind": "webhook", "webhook_url": "https://x.example/", "webhook_secret_ref": "SECRET_KEY"},
         "webhook_secret_ref"),
    ],
)  # fmt: skip
def test_a_router_with_bad_settings_is_refused_naming_the_field(db, fields, field):
    from django.core.exceptions import ValidationError

    router = TrafficRouter(
        name="r",
        kind="haproxy",
        haproxy_address="unix:/run/haproxy/admin.sock",
        haproxy_backend="llm",
        haproxy_source_server="baseline",
        haproxy_target_server="canary",
    )
    for key, value in fields.items():
        setattr(router, key, value)
    with pytest.raises(ValidationError) as caught:
        router.full_clean()
    assert field in caught.value.message_dict


def test_a_router_failure_reads_in_the_readers_language():
    from django.utils import translation

    from rollout.labels import reason_data, reason_text

    data = reason_data(
        "router_failed",
        router="edge",
        outcome="unreachable",
        workload="chat",
        share="5",
        answer="x",
    )
    with translation.override("zh-hans"):
        text = reason_text(data, "fallback")
    assert "路由器不可达" in text and "edge" in text and "fallback" not in text
