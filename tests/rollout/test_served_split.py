"""Weights are not a split: a real Debian HAProxy in front of two real HTTP backends, its own
per-server counters deciding when a step's clock starts, a restart or a stop pausing the
step, the router's own failures failing an error-rate criterion, an abort taking everything
back, and how HAProxy's ``balance`` modes follow a runtime weight change."""

from __future__ import annotations

import http.client
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rollout.analysis import semantics as S
from rollout.models import (
    GateState,
    PlanState,
    ReadingVerdict,
    RouterCall,
    RouterReading,
    TrafficRouter,
)
from rollout.routers import Desired, HAProxyRouter, RouterError
from rollout.services.audit import Actor
from rollout.services.commands import plan_command
from rollout.services.router_readings import router_evidence
from rollout.services.router_watch import plan_routers_reread
from rollout.services.transitions import plan_abort, plan_retry, plan_start
from tests.rollout.conftest import rev


class _Backend:
    """A loopback HTTP server answering 200 to every GET (one side of the canary)."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _gateway(tmp_path, *, balance="roundrobin", canary_up=True):
    from tests.servers import HAProxyServer, free_port, haproxy_binary

    if haproxy_binary() is None:
        pytest.skip("haproxy is not installed (make test installs it)")
    backends = [_Backend(), _Backend() if canary_up else None]
    ports = {"baseline": backends[0].port, "canary": backends[1].port if canary_up else free_port()}
    server = HAProxyServer(tmp_path / f"haproxy-{balance}", ports, balance=balance).start()
    return server, [b for b in backends if b is not None]


@pytest.fixture
def gateway(tmp_path):
    made = []

    def make(**kwargs):
        server, backends = _gateway(tmp_path, **kwargs)
        made.append((server, backends))
        return server

    yield make
    for server, backends in made:
        server.stop()
        for backend in backends:
            backend.stop()


def send(gateway, n: int) -> list[int]:
    """``n`` client requests through HAProxy, one after the other; their status codes."""
    codes = []
    for _ in range(n):
        conn = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=5)
        conn.request("GET", "/v1/completions")
        response = conn.getresponse()
        response.read()
        codes.append(response.status)
        conn.close()
    return codes


def served_router(gateway, **fields) -> TrafficRouter:
    router = TrafficRouter(
        name="gateway-served",
        kind="haproxy",
        haproxy_address=gateway.address,
        haproxy_backend="llm",
        haproxy_source_server="baseline",
        haproxy_target_server="canary",
        timeout_seconds=2.0,
        split_window_seconds=5,
        split_min_requests=40,
        confirm_within_seconds=60,
        **{"split_tolerance_points": 2.0, **fields},
    )
    router.full_clean()
    router.save()
    return router


def to_gray(plan_factory, users, router, *, workload="acme-chat"):
    """A plan whose ``workload`` moves through ``router``, started and at gray 5%."""
    plan = plan_factory(criteria={"gray": [{}]})
    item = plan.workloads.get(workload__name=workload)
    item.router = router
    item.save(update_fields=["router"])
    op = Actor(users["operator"])
    plan_start(plan_id=plan.pk, actor=op)
    plan_command(command="promote", plan_id=plan.pk, actor=op)
    plan_command(
        command="approve", plan_id=plan.pk, actor=Actor(users["approver"]), revision=rev(plan)
    )
    plan.refresh_from_db()
    item.refresh_from_db()
    return plan, item


def reread_after(plan, seconds: float):
    """Re-read the plan's routers as the beat would, ``seconds`` after the share's read-back."""
    call = RouterCall.objects.filter(plan=plan, operation="set").latest("id")
    plan_routers_reread(plan_id=plan.pk, now=call.confirmed_at + timedelta(seconds=seconds))
    return RouterReading.objects.filter(plan=plan).latest("at", "id")


def test_the_clock_starts_only_once_the_target_served_its_share(
    plan_factory, users, gateway, client
):
    haproxy = gateway()
    plan, item = to_gray(plan_factory, users, served_router(haproxy))
    run = plan.current_gate.runs.get()
    # Weights read back 95/5, yet nothing is measured until the split is seen.
    assert (haproxy.weight("baseline"), haproxy.weight("canary")) == (95, 5)
    assert plan.state == PlanState.RUNNING and run.traffic_at is None
    assert RouterReading.objects.filter(plan=plan).latest("at", "id").verdict == "baseline"
    assert reread_after(plan, 2).verdict == ReadingVerdict.TOO_FEW  # window not elapsed
    run.refresh_from_db()
    assert run.traffic_at is None
    send(haproxy, 100)
    reading = reread_after(plan, 6)
    assert reading.verdict == ReadingVerdict.WITHIN
    assert reading.window_requests == 100 and 4 <= reading.target_requests <= 6
    assert reading.served_share == pytest.approx(reading.target_requests)  # of 100
    run.refresh_from_db()
    assert run.traffic_at == reading.at
    assert not run.metrics.filter(next_at=None).exists()
    # The plan page shows the share asked, the weights' read-back and the split served.
    client.force_login(users["operator"])
    page = client.get(f"/migrations/{plan.pk}/").content.decode()
    assert "Served split (observed)" in page and "Share confirmed (weights)" in page
    assert f"{reading.served_share:.1f}%</strong> of 100 requests" in page


def test_leastconn_reads_back_the_weights_but_serves_another_split_and_the_step_pauses(
    plan_factory, users, gateway
):
    haproxy = gateway(balance="leastconn")
    plan, item = to_gray(plan_factory, users, served_router(haproxy))
    assert item.confirmed_share == pytest.approx(0.05)  # what the weights say
    send(haproxy, 60)
    reading = reread_after(plan, 6)
    assert reading.verdict == ReadingVerdict.SETTLING
    assert reading.served_share == pytest.approx(50.0) and "asked 5%" in reading.detail
    plan.current_gate.runs.get().refresh_from_db()
    assert plan.current_gate.runs.get().traffic_at is None
    send(haproxy, 60)
    reading = reread_after(plan, 61)  # past the router's confirm_within_seconds
    assert reading.verdict == ReadingVerdict.NOT_SERVED
    plan.refresh_from_db()
    assert plan.state == PlanState.PAUSED
    assert plan.current_gate.state == GateState.TRAFFIC_UNCONFIRMED
    row = plan.audit_entries.get(action="router_not_served")
    assert "never reached the share" in row.reason and "served 50.0%" in row.reason


def test_a_restarted_haproxy_pauses_the_step_and_retry_pushes_the_share_again(
    plan_factory, users, gateway
):
    haproxy = gateway()
    plan, item = to_gray(plan_factory, users, served_router(haproxy))
    send(haproxy, 100)
    assert reread_after(plan, 6).verdict == ReadingVerdict.WITHIN
    haproxy.stop()
    haproxy.start()  # back at its configuration's weights, 100/0
    reading = reread_after(plan, 16)
    assert reading.verdict == ReadingVerdict.DRIFT and reading.weights_share == 0.0
    plan.refresh_from_db()
    item.refresh_from_db()
    assert plan.state == PlanState.PAUSED
    assert plan.current_gate.state == GateState.TRAFFIC_UNCONFIRMED
    assert item.confirmed_share == 0.0  # never "confirmed 5%" on a router at 0
    row = plan.audit_entries.get(action="router_drift")
    assert row.reason.startswith("router no longer applies the share")
    sets = RouterCall.objects.filter(plan=plan, operation="set").count()
    plan_retry(plan_id=plan.pk, actor=Actor(users["operator"]), reason="HAProxy restarted")
    plan.refresh_from_db()
    assert RouterCall.objects.filter(plan=plan, operation="set").count() == sets + 1
    assert RouterCall.objects.filter(plan=plan).latest("id").outcome == "confirmed"
    assert (haproxy.weight("baseline"), haproxy.weight("canary")) == (95, 5)
    assert plan.state == PlanState.RUNNING
    assert plan.current_gate.runs.latest("id").traffic_at is None  # the split again


def test_a_stopped_haproxy_pauses_the_step_naming_the_router(plan_factory, users, gateway):
    haproxy = gateway()
    plan, _item = to_gray(plan_factory, users, served_router(haproxy))
    haproxy.stop()
    reading = reread_after(plan, 6)
    assert reading.verdict == ReadingVerdict.DRIFT
    assert "could not be read: unreachable" in reading.detail
    plan.refresh_from_db()
    assert plan.state == PlanState.PAUSED


def test_the_routers_own_failures_fail_an_error_ratio_the_engines_call_zero(
    plan_factory, users, gateway
):
    haproxy = gateway(canary_up=False)  # the target refuses connections: HAProxy answers 503
    router = served_router(haproxy, split_tolerance_points=5.0)
    plan, _item = to_gray(plan_factory, users, router)
    failed = send(haproxy, 100).count(503)
    assert 4 <= failed <= 6  # the target's 5%, each answered 503 by HAProxy
    reading = reread_after(plan, 6)
    assert (reading.target_requests, reading.target_errors) == (failed, failed)
    base = RouterReading.objects.filter(plan=plan, verdict="baseline").latest("at", "id")
    spec = {
        "metric": "serving_error_ratio",
        "entity_kind": "workload",
        "workload_id": None,
        "comparator": "le",
        "threshold": 0.01,
        "compare_to_baseline": False,
    }
    # The engines saw no failure (nothing reached the target): the router's count decides.
    outcome, value, reason, _data = router_evidence(
        plan, spec, base.at, reading.at, outcome=S.SUCCESSFUL, value=0.0, threshold=0.01,
        reason="mean(serving_error_ratio) = 0 ≤ 0.01 holds", data=None,
    )  # fmt: skip
    assert outcome == S.FAILED and value == 1.0
    assert f"router: {failed} of {failed} target requests failed" in reason


def test_a_split_outside_the_tolerance_in_the_window_is_never_a_pass(plan_factory, users, db):
    plan = plan_factory(criteria={"gray": [{}]})
    item = plan.workloads.get(workload__name="acme-chat")
    from django.utils import timezone

    now = timezone.now()
    RouterReading.objects.create(
        plan=plan,
        plan_workload=item,
        at=now - timedelta(seconds=30),
        asked_share=50,
        weights_share=50,
        served_share=79.1,
        verdict=ReadingVerdict.OUT_OF_TOLERANCE,
        detail="served 79.1% of 277 requests, asked 50% ± 5",
    )
    spec = {"metric": "ttft_p99", "entity_kind": "workload", "workload_id": None}
    start = now - timedelta(seconds=60)
    outcome, _v, reason, data = router_evidence(
        plan, spec, start, now, outcome=S.SUCCESSFUL, value=0.2, threshold=0.5,
        reason="holds", data=None,
    )  # fmt: skip
    assert outcome == S.INCONCLUSIVE and "79.1%" in reason
    assert data["code"] == "split_out_of_tolerance"
    # A window that does not hold the reading is not affected.
    later = router_evidence(
        plan, spec, now - timedelta(seconds=10), now, outcome=S.SUCCESSFUL, value=0.2,
        threshold=0.5, reason="holds", data=None,
    )  # fmt: skip
    assert later[0] == S.SUCCESSFUL


def test_abort_puts_the_source_back_to_everything_even_an_approved_step(
    plan_factory, users, gateway
):
    haproxy = gateway()
    # The pilot's workload passed its gate (approved at 100% on the target)…
    plan, item = to_gray(
        plan_factory, users, served_router(haproxy, split_tolerance_points=None),
        workload="acme-batch",
    )  # fmt: skip
    assert item.stable_share == 1.0 and haproxy.weight("canary") == 100
    # …an abort still takes it all back, read back and with no new request on the target.
    plan_abort(plan_id=plan.pk, actor=Actor(users["operator"]), reason="stop everything")
    plan.refresh_from_db()
    item.refresh_from_db()
    assert plan.state == PlanState.ABORTED
    assert (haproxy.weight("baseline"), haproxy.weight("canary")) == (100, 0)
    assert item.share == 0.0 and item.confirmed_share == 0.0
    restore = RouterCall.objects.get(plan=plan, operation="restore")
    assert "no new request on canary" in restore.answer
    client = HAProxyRouter(
        address=haproxy.address, backend="llm", source_server="baseline", target_server="canary"
    )
    before = client.counters()["target"]["requests"]
    assert set(send(haproxy, 20)) == {200}
    assert client.counters()["target"]["requests"] == before


@pytest.mark.parametrize(
    ("balance", "share", "served"),
    [
        # roundrobin and random follow a runtime weight change from the first requests.
        ("roundrobin", 50, (40, 40)),
        ("roundrobin", 5, (4, 4)),
        # leastconn at low concurrency splits by connection count, whatever the weights.
        ("leastconn", 5, (40, 40)),
    ],
)
def test_how_haproxy_balance_modes_follow_a_runtime_weight_change(gateway, balance, share, served):
    """Measured on Debian's HAProxy 2.6 with 80 sequential requests after the change (the
    figures docs/traffic-routers.md quotes): the read-back is the same in every mode."""
    haproxy = gateway(balance=balance)
    router = HAProxyRouter(
        address=haproxy.address, backend="llm", source_server="baseline", target_server="canary"
    )
    send(haproxy, 10)
    desired = Desired(
        plan_id=1, plan="p", step="s", workload="w", source="a", target="b", share=share,
        idempotency_key="k",
    )  # fmt: skip
    assert router.set_share(desired).share == pytest.approx(share)
    before = router.counters()["target"]["requests"]
    send(haproxy, 80)
    got = router.counters()["target"]["requests"] - before
    low, high = served
    assert low <= got <= high, f"{balance} at {share}%: target served {got} of 80"


def test_static_rr_refuses_a_runtime_weight_other_than_0_or_100_percent(gateway):
    """Debian's HAProxy 2.6 with ``balance static-rr`` answers "only accepts weights '0%' and
    '100%'": the call is refused (the step pauses), never taken for a split."""
    haproxy = gateway(balance="static-rr")
    router = HAProxyRouter(
        address=haproxy.address, backend="llm", source_server="baseline", target_server="canary"
    )
    desired = Desired(
        plan_id=1, plan="p", step="s", workload="w", source="a", target="b", share=50,
        idempotency_key="k",
    )  # fmt: skip
    with pytest.raises(RouterError) as caught:
        router.set_share(desired)
    assert caught.value.code == "refused" and "static LB algorithm" in caught.value.detail
