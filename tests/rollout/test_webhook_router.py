"""The deploy-tool router: a signed desired state, answered at once or by a signed callback;
retries with backoff; refusals, garbage and a missing secret pause the step by reason."""

from __future__ import annotations

import json
import time

import pytest

from rollout import routers
from rollout.models import GateState, PlanState, RouterCall, TrafficRouter
from rollout.services.audit import Actor
from rollout.services.commands import plan_command
from rollout.services.router_callbacks import router_confirmations_expire
from rollout.services.transitions import plan_start
from rollout.services.webhooks import webhook_signature
from tests.rollout.conftest import rev
from tests.servers import ScriptedHTTPServer

SECRET = "tool-secret"
REF = "PORTAL_ROUTER_SECRET_ARGO"


@pytest.fixture(autouse=True)
def loopback_and_secret(settings, monkeypatch):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    monkeypatch.setenv(REF, SECRET)
    monkeypatch.setattr(routers.webhook, "BACKOFF_SECONDS", 0.01)


@pytest.fixture
def tool():
    made = []

    def make(answers):
        made.append(ScriptedHTTPServer(answers))
        return made[-1]

    yield make
    for server in made:
        server.stop()


def confirm(headers, body):
    share = json.loads(body)["share"]
    return 200, json.dumps({"status": "confirmed", "share": share})


def webhook_plan(plan_factory, url, *, secret_ref: str = REF, **kwargs):
    """A plan whose gray workload ``acme-chat`` is moved by a deploy-tool webhook router."""
    router = TrafficRouter(
        name="argo",
        kind="webhook",
        webhook_url=url,
        webhook_secret_ref=secret_ref,
        timeout_seconds=2,
    )
    router.full_clean()
    router.save()
    plan = plan_factory(**kwargs)
    item = plan.workloads.get(workload__name="acme-chat")
    item.router = router
    item.save(update_fields=["router"])
    return plan, router


def to_gray(plan, users):
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan_command(command="promote", plan_id=plan.pk, actor=Actor(users["operator"]))
    plan_command(
        command="approve", plan_id=plan.pk, actor=Actor(users["approver"]), revision=rev(plan)
    )
    plan.refresh_from_db()
    return plan


def test_the_desired_state_is_signed_and_a_synchronous_answer_confirms_it(
    plan_factory, users, tool
):
    server = tool([confirm])
    plan, _router = webhook_plan(plan_factory, server.url)
    plan = to_gray(plan, users)
    assert plan.state == PlanState.RUNNING
    headers, body = server.requests[-1]
    sent = json.loads(body)
    assert {k: sent[k] for k in ("plan", "step", "workload", "source", "target", "share")} == {
        "plan": plan.name,
        "step": "gray 5%",
        "workload": "acme-chat",
        "source": "old",
        "target": "uni",
        "share": 5.0,
    }
    assert headers["Idempotency-Key"] == sent["idempotency_key"]
    stamp = headers["X-Portal-Timestamp"]
    assert headers["X-Portal-Signature"] == webhook_signature(
        secret=SECRET, timestamp=stamp, body=body
    )
    assert RouterCall.objects.filter(desired_share=5, outcome="confirmed").count() == 1


def test_5xx_is_retried_with_the_same_idempotency_key_then_confirmed(plan_factory, users, tool):
    server = tool([(503, ""), (503, ""), confirm])
    plan, _router = webhook_plan(plan_factory, server.url)
    plan = to_gray(plan, users)
    assert plan.state == PlanState.RUNNING
    keys = {h["Idempotency-Key"] for h, b in server.requests if json.loads(b)["share"] == 5.0}
    assert len(keys) == 1 and len(server.requests) >= 3


@pytest.mark.parametrize(
    ("answer", "outcome"),
    [
        ((200, '{"status": "refused", "reason": "canary not healthy"}'), "refused"),
        ((403, ""), "refused"),
        ((200, "<html>not json</html>"), "garbage"),
        ((200, '{"status": "confirmed", "share": 300}'), "garbage"),
        ((200, '{"status": "confirmed", "share": 50}'), "mismatch"),
        ((503, ""), "unreachable"),
    ],
)
def test_a_tool_that_does_not_confirm_pauses_the_step_by_reason(
    plan_factory, users, tool, answer, outcome
):
    answers = [confirm, answer] if answer[0] != 503 else [confirm, answer, answer, answer]
    server = tool(answers)
    plan, _router = webhook_plan(plan_factory, server.url)
    plan = to_gray(plan, users)
    assert plan.state == PlanState.PAUSED
    assert plan.current_gate.state == GateState.TRAFFIC_UNCONFIRMED
    row = plan.audit_entries.filter(to_state=PlanState.PAUSED).get()
    assert row.reason_data["params"]["outcome"] == outcome


def test_a_missing_secret_sends_nothing_and_pauses(plan_factory, users, tool, monkeypatch):
    server = tool([confirm])
    plan, _router = webhook_plan(plan_factory, server.url)
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    sent = len(server.requests)  # the start confirmed the workload at 0%
    monkeypatch.delenv(REF)
    plan_command(command="promote", plan_id=plan.pk, actor=Actor(users["operator"]))
    plan_command(
        command="approve", plan_id=plan.pk, actor=Actor(users["approver"]), revision=rev(plan)
    )
    plan.refresh_from_db()
    assert plan.state == PlanState.PAUSED and len(server.requests) == sent
    assert REF in plan.audit_entries.filter(to_state=PlanState.PAUSED).get().reason


def _callback(client, router, payload: dict, *, secret: str = SECRET, age: int = 0):
    body = json.dumps(payload).encode()
    stamp = str(int(time.time()) - age)
    return client.post(
        f"/api/v1/router-callbacks/{router.pk}/",
        body,
        content_type="application/json",
        headers={
            "X-Portal-Timestamp": stamp,
            "X-Portal-Signature": webhook_signature(secret=secret, timestamp=stamp, body=body),
        },
    )


def test_a_202_waits_for_the_signed_callback_before_the_clock_starts(
    plan_factory, users, tool, client
):
    server = tool([confirm, (202, "")])
    plan, router = webhook_plan(plan_factory, server.url, criteria={"gray": [{}]})
    plan = to_gray(plan, users)
    run = plan.current_gate.runs.get()
    assert plan.state == PlanState.RUNNING and run.traffic_at is None
    assert not run.metrics.exclude(next_at=None).exists()  # nothing measured before it moved
    call = RouterCall.objects.get(outcome="pending")
    # A forged or stale callback changes nothing
    forged = {"idempotency_key": call.idempotency_key, "status": "confirmed", "share": 5}
    assert _callback(client, router, forged, secret="wrong").status_code == 401
    assert _callback(client, router, forged, age=3600).status_code == 401
    assert _callback(client, router, {**forged, "idempotency_key": "x"}).status_code == 404
    call.refresh_from_db()
    assert call.outcome == "pending"
    # The real one starts the step's clock
    response = _callback(client, router, forged)
    assert response.status_code == 200 and response.json()["outcome"] == "confirmed"
    run.refresh_from_db()
    assert run.traffic_at is not None
    assert not run.metrics.filter(next_at=None).exists()


def test_a_callback_that_never_comes_times_out_and_pauses(plan_factory, users, tool):
    server = tool([confirm, (202, "")])
    plan, router = webhook_plan(plan_factory, server.url, criteria={"gray": [{}]})
    plan = to_gray(plan, users)
    call = RouterCall.objects.get(outcome="pending")
    from datetime import timedelta

    assert router_confirmations_expire(now=call.at + timedelta(seconds=10)) == 0
    later = call.at + timedelta(seconds=router.confirm_within_seconds + 1)
    assert router_confirmations_expire(now=later) == 1
    plan.refresh_from_db()
    assert plan.state == PlanState.PAUSED
    assert plan.current_gate.state == GateState.TRAFFIC_UNCONFIRMED
    assert plan.audit_entries.filter(action="router_failed").exists()


def test_a_restore_answered_202_is_unconfirmed_until_the_callback_confirms_it(
    plan_factory, users, tool, client
):
    from rollout.services.transitions import plan_abort

    server = tool([confirm, confirm, (202, "")])
    plan, router = webhook_plan(plan_factory, server.url)
    plan = to_gray(plan, users)
    plan_abort(plan_id=plan.pk, actor=Actor(users["operator"]), reason="stop")
    plan.refresh_from_db()
    assert plan.state == PlanState.ROLLBACK_UNCONFIRMED
    call = RouterCall.objects.get(operation="restore", outcome="pending")
    assert json.loads(server.requests[-1][1])["operation"] == "restore"
    body = {"idempotency_key": call.idempotency_key, "status": "confirmed", "share": 0}
    assert _callback(client, router, body).status_code == 200
    plan.refresh_from_db()
    assert plan.state == PlanState.ABORTED
    assert plan.audit_entries.filter(action="router_confirmed", to_state="aborted").exists()


def test_a_callback_that_beats_the_portals_own_commit_is_the_answer(
    plan_factory, users, tool, client, monkeypatch
):
    from rollout.services import transitions

    server = tool([confirm])
    plan, router = webhook_plan(plan_factory, server.url, criteria={"gray": [{}]})
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    # The promotion commits its intent; the tool got it (sent once) and calls back before
    # the portal committed the tool's synchronous answer.
    monkeypatch.setattr(transitions, "router_intents_dispatch", lambda *a, **k: 0)
    plan_command(command="promote", plan_id=plan.pk, actor=Actor(users["operator"]))
    plan_command(
        command="approve", plan_id=plan.pk, actor=Actor(users["approver"]), revision=rev(plan)
    )
    call = RouterCall.objects.get(outcome="intended")
    RouterCall.objects.filter(pk=call.pk).update(attempts=1)
    body = {"idempotency_key": call.idempotency_key, "status": "confirmed", "share": 5}
    response = _callback(client, router, body)
    assert response.status_code == 200 and response.json()["outcome"] == "confirmed"
    call.refresh_from_db()
    plan.refresh_from_db()
    assert plan.state == PlanState.RUNNING
    assert plan.current_gate.runs.get().traffic_at == call.confirmed_at


def test_a_superseded_sets_late_callback_is_recorded_and_changes_nothing(
    plan_factory, users, tool, client
):
    from rollout.models import AuditEntry
    from rollout.services.transitions import plan_abort

    server = tool([confirm, (202, ""), confirm])
    plan, router = webhook_plan(plan_factory, server.url, criteria={"gray": [{}]})
    plan = to_gray(plan, users)
    old = RouterCall.objects.get(operation="set", outcome="pending")
    plan_abort(plan_id=plan.pk, actor=Actor(users["operator"]), reason="stop")
    plan.refresh_from_db()
    old.refresh_from_db()
    # The restore superseded the pending set explicitly, then was sent and confirmed.
    assert old.outcome == "superseded" and "superseded by restore 0%" in old.answer
    assert plan.state == PlanState.ABORTED
    assert RouterCall.objects.get(operation="restore").outcome == "confirmed"
    # The tool's late confirmation of the old set: answered, recorded, and nothing moves.
    body = {"idempotency_key": old.idempotency_key, "status": "confirmed", "share": 100}
    assert _callback(client, router, body).status_code == 200
    plan.refresh_from_db()
    item = plan.workloads.get(workload__name="acme-chat")
    assert plan.state == PlanState.ABORTED
    assert item.confirmed_share == 0.0
    assert AuditEntry.objects.filter(
        plan=plan, action="router_superseded", reason__contains="callback for a superseded call"
    ).exists()
