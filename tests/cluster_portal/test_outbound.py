"""The one outbound call: a wall-clock deadline over connect, headers and body, a capped body."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from cluster_portal.web.outbound import (
    OutboundRefused,
    OutboundTimeout,
    ResponseTooLarge,
    outbound_request,
)
from tests.servers import TricklingServer


@pytest.fixture
def loopback_allowed(settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]


@pytest.fixture
def trickler():
    servers: list[TricklingServer] = []

    def start(**kwargs) -> TricklingServer:
        server = TricklingServer(**kwargs)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


class _Plain:
    """A well-behaved loopback server answering ``body`` with ``status``."""

    def __init__(self, body: bytes, status: int = 200, declare: bool = True) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                self.send_response(status)
                if declare:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("mode", ["body", "headers", "silent"])
def test_a_peer_trickling_one_byte_a_second_is_cut_off_at_the_deadline(
    loopback_allowed, trickler, mode
):
    server = trickler(mode=mode, interval=1.0)
    started = time.monotonic()
    with pytest.raises(OutboundTimeout):
        outbound_request(server.url + "/metrics", deadline_seconds=2.0, max_bytes=10**7)
    elapsed = time.monotonic() - started
    # Each byte arrives well within any per-read timeout; only a total deadline ends it.
    assert 1.9 < elapsed < 3.5, elapsed
    assert server.wait_closed(5), "the connection to the trickling peer was left open"


def test_a_complete_answer_comes_back_with_status_and_body(loopback_allowed):
    server = _Plain(b"hello")
    try:
        answer = outbound_request(server.url, deadline_seconds=5, max_bytes=100)
    finally:
        server.stop()
    assert answer.status == 200 and answer.body == b"hello"


def test_an_error_status_is_returned_with_its_body(loopback_allowed):
    server = _Plain(b'{"status":"error"}', status=422)
    try:
        answer = outbound_request(server.url, deadline_seconds=5, max_bytes=100)
    finally:
        server.stop()
    assert answer.status == 422 and b"error" in answer.body


@pytest.mark.parametrize("declare", [True, False])
def test_an_answer_over_the_cap_is_refused_without_reading_on(loopback_allowed, declare):
    server = _Plain(b"x" * 50_000, declare=declare)
    try:
        with pytest.raises(ResponseTooLarge):
            outbound_request(server.url, deadline_seconds=5, max_bytes=10_000)
    finally:
        server.stop()


def test_the_address_policy_still_applies(settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = []
    with pytest.raises(OutboundRefused):
        outbound_request("http://127.0.0.1:9/", deadline_seconds=2, max_bytes=10)


def test_a_refused_connection_is_an_os_error_not_a_timeout(loopback_allowed):
    from tests.servers import free_port

    with pytest.raises(ConnectionRefusedError):
        outbound_request(f"http://127.0.0.1:{free_port()}/", deadline_seconds=2, max_bytes=10)
