"""The HAProxy router against a real Debian HAProxy: weights set, read back, names checked."""

from __future__ import annotations

import socket
import threading

import pytest

from rollout.routers import Desired, HAProxyRouter, RouterError


def desired(share: float) -> Desired:
    return Desired(
        plan_id=1,
        plan="p",
        step="gray 25%",
        workload="chat",
        source="old",
        target="uni",
        share=share,
        idempotency_key="k",
    )


def router_for(haproxy, **names) -> HAProxyRouter:
    return HAProxyRouter(
        address=haproxy.address,
        backend=names.get("backend", "llm"),
        source_server=names.get("source", "baseline"),
        target_server=names.get("target", "canary"),
        deadline_seconds=2.0,
    )


@pytest.mark.parametrize("share", [0, 5, 25, 50, 100])
def test_a_share_becomes_two_weights_and_is_confirmed_by_reading_them_back(haproxy, share):
    confirmation = router_for(haproxy).set_share(desired(share))
    assert confirmation.share == pytest.approx(share)
    assert (haproxy.weight("canary"), haproxy.weight("baseline")) == (share, 100 - share)
    assert router_for(haproxy).read_share() == pytest.approx(share)


def test_read_share_follows_a_weight_an_operator_set_by_hand(haproxy):
    haproxy.command("set server llm/canary weight 30; set server llm/baseline weight 90")
    assert router_for(haproxy).read_share() == pytest.approx(25.0)


@pytest.mark.parametrize(
    ("names", "named"),
    [({"backend": "nope"}, "'nope'"), ({"target": "ghost"}, "'ghost'"), ({"source": "x"}, "'x'")],
)
def test_an_unknown_backend_or_server_is_refused_by_name_and_nothing_moves(haproxy, names, named):
    with pytest.raises(RouterError) as caught:
        router_for(haproxy, **names).set_share(desired(50))
    assert caught.value.code == "unknown_name" and named in caught.value.detail
    assert (haproxy.weight("baseline"), haproxy.weight("canary")) == (100, 0)


@pytest.mark.parametrize("share", [-1, 100.5, 250])
def test_a_share_outside_0_to_100_never_reaches_haproxy(haproxy, share):
    with pytest.raises(RouterError, match="outside 0–100"):
        router_for(haproxy).set_share(desired(share))
    assert haproxy.weight("canary") == 0


def test_haproxy_down_is_unreachable_naming_the_socket(haproxy):
    haproxy.stop()
    with pytest.raises(RouterError) as caught:
        router_for(haproxy).set_share(desired(5))
    assert caught.value.code == "unreachable" and str(haproxy.socket) in caught.value.detail


def _unix_server(path, answer: bytes | None):
    """A unix socket that answers ``answer`` to anything (``None``: says nothing, ever)."""
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    listener.listen(4)
    held = []

    def serve():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.recv(4096)
            if answer is None:
                held.append(conn)
                continue
            conn.sendall(answer)
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return listener


def test_a_socket_answering_garbage_is_garbage_not_a_share(tmp_path):
    listener = _unix_server(tmp_path / "g.sock", b"hello, I am not haproxy\n")
    try:
        router = HAProxyRouter(
            address=f"unix:{tmp_path / 'g.sock'}",
            backend="llm",
            source_server="a",
            target_server="b",
        )
        with pytest.raises(RouterError) as caught:
            router.read_share()
        assert caught.value.code == "garbage" and "not haproxy" in caught.value.detail
    finally:
        listener.close()


def test_a_socket_that_never_answers_times_out_within_the_deadline(tmp_path):
    import time

    listener = _unix_server(tmp_path / "s.sock", None)
    try:
        router = HAProxyRouter(
            address=f"unix:{tmp_path / 's.sock'}",
            backend="llm",
            source_server="a",
            target_server="b",
            deadline_seconds=0.5,
        )
        started = time.monotonic()
        with pytest.raises(RouterError) as caught:
            router.read_share()
        assert caught.value.code == "timeout"
        assert time.monotonic() - started < 2.0
    finally:
        listener.close()
