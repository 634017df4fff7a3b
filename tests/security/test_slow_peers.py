"""No outbound peer can hold a process (issue 26 §2), replayed against real trickling servers.

Before: an exporter, a webhook receiver or a PromQL source sending one byte a second held a
worker for as long as it liked (the scrape's deadline was checked between 64 KiB reads,
webhooks and PromQL had per-read timeouts); each interval dispatched another scrape of the
same stuck target; a killed delivery was redelivered with ``attempts`` still 0 and a
deactivated subscription kept delivering; in the web tier a trickling source held each
request past gunicorn's timeout and a 60 MiB answer was parsed whole. Every test here is cut
off by an alarm well before such a peer would let go, so on the old code it fails quickly.
"""

from __future__ import annotations

import signal
import threading
import time
from contextlib import contextmanager
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.utils import timezone

from inventory.models import Cluster
from rollout.models import WebhookDelivery, WebhookSubscription
from rollout.services.webhooks import webhook_deliver
from telemetry.models import ExporterTarget, PromQLDataSource
from telemetry.read.local.exporters import exporter_targets_due
from telemetry.read.promql.guard import states_clear
from telemetry.receivers.scrape import exporter_scrape, exporter_target_claim
from tests.servers import TricklingServer

HARDWARE_API = "/api/v1/dashboards/hardware/"


class HeldTooLong(BaseException):
    """Raised by the alarm: the call was still held by the slow peer (BaseException, so no
    ``except Exception`` in the code under test can swallow it)."""


@contextmanager
def must_finish_within(seconds: float):
    def ring(*_):
        raise HeldTooLong(f"still held by the slow peer after {seconds} s")

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(autouse=True)
def loopback_allowed(settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    states_clear()
    yield
    states_clear()


@pytest.fixture
def trickler():
    made: list[TricklingServer] = []

    def start(**kwargs) -> TricklingServer:
        made.append(TricklingServer(**kwargs))
        return made[-1]

    yield start
    for server in made:
        server.stop()


@pytest.fixture
def cluster(db) -> Cluster:
    return Cluster.objects.create(name="slow-peers", kind=Cluster.Kind.UNIFIED)


# --- scrapes -------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("mode", ["body", "headers"])
def test_a_trickling_exporter_holds_a_scrape_only_for_its_timeout(cluster, trickler, mode):
    server = trickler(mode=mode, interval=1.0)
    target = ExporterTarget.objects.create(
        name="trickle", cluster=cluster, url=server.url + "/metrics", timeout_seconds=2
    )
    started = time.monotonic()
    with must_finish_within(8):
        result = exporter_scrape(target=target)
    assert time.monotonic() - started < 4
    assert result["ok"] is False and "timed out after 2 s" in result["error"]
    assert server.wait_closed(5)


@pytest.mark.django_db
def test_a_stuck_scrape_is_not_joined_by_another_each_interval(cluster):
    target = ExporterTarget.objects.create(
        name="stuck", cluster=cluster, url="http://127.0.0.1:9/metrics", interval_seconds=5
    )
    now = timezone.now()
    assert exporter_target_claim(target_id=target.pk, now=now) is not None
    for later in (6, 11, 16, 60):  # the scrape still has not recorded an outcome
        moment = now + timedelta(seconds=later)
        assert exporter_targets_due(now=moment) == []
        assert exporter_target_claim(target_id=target.pk, now=moment) is None


# --- webhooks ------------------------------------------------------------------------------


def _delivery(url: str, **fields) -> WebhookDelivery:
    subscription = WebhookSubscription.objects.create(
        name="slow", url=url, events=["transition"], secret="s3cret", **fields
    )
    return WebhookDelivery.objects.create(
        subscription=subscription, event="transition", payload={"event": "transition"}
    )


@pytest.mark.django_db
@pytest.mark.parametrize("mode", ["headers", "silent"])
def test_a_trickling_webhook_receiver_is_cut_off_at_the_deadline(settings, trickler, mode):
    settings.WEBHOOK_DEADLINE_SECONDS = 2
    server = trickler(mode=mode, interval=1.0)
    delivery = _delivery(server.url + "/hook")
    started = time.monotonic()
    with must_finish_within(8):
        delivery = webhook_deliver(delivery_id=delivery.pk)
    assert time.monotonic() - started < 4
    assert delivery.status == "retrying" and delivery.attempts == 1
    assert delivery.last_error == "no answer within 2 s"
    assert server.wait_closed(5)


@pytest.mark.django_db
def test_an_attempt_cut_short_by_a_kill_has_already_been_counted(settings, trickler):
    """The worker dies mid-request (here: the alarm, like a SIGKILL, ends the call): the
    attempt was recorded before the request, so its redelivery counts on from 1."""
    settings.WEBHOOK_DEADLINE_SECONDS = 60
    server = trickler(mode="headers", interval=1.0)
    delivery = _delivery(server.url + "/hook")
    with pytest.raises(HeldTooLong), must_finish_within(2):
        webhook_deliver(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert delivery.attempts == 1 and delivery.status == "pending"
    # A second copy of the task (a redelivery, the sweep) does not POST while the killed
    # attempt's lease holds: never two requests in flight for one delivery.
    connections = server.connections
    again = webhook_deliver(delivery_id=delivery.pk)
    assert again.attempts == 1 and server.connections == connections


class _Receiver:
    def __init__(self) -> None:
        hits = self.hits = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                hits.append(self.path)
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.django_db
def test_deactivating_a_subscription_stops_its_pending_deliveries():
    receiver = _Receiver()
    try:
        delivery = _delivery(receiver.url)
        WebhookDelivery.objects.filter(pk=delivery.pk).update(status="retrying", attempts=2)
        subscription = delivery.subscription
        subscription.active = False
        subscription.save()  # however it is deactivated, the delivery checks
        delivery = webhook_deliver(delivery_id=delivery.pk)
    finally:
        receiver.close()
    assert receiver.hits == []
    assert delivery.status == "cancelled" and delivery.attempts == 2


# --- PromQL in the web tier ------------------------------------------------------------------


def _read_token(users) -> str:
    from accounts.services.tokens import token_create

    return token_create(
        name="reader", scopes=["read"], created_by=users["operator"], owner=users["operator"]
    ).plaintext


@pytest.mark.django_db
def test_a_trickling_promql_source_answers_503_within_the_request_budget(
    settings, trickler, cluster, users, client_as
):
    from rest_framework.test import APIClient

    settings.PROMQL_WEB_BUDGET_SECONDS = 3
    server = trickler(mode="body", interval=1.0, content_type="application/json")
    # The longest timeout a source may have: only the web budget keeps the request short.
    PromQLDataSource.objects.create(cluster=cluster, url=server.url, timeout_seconds=60)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {_read_token(users)}")
    started = time.monotonic()
    with must_finish_within(10):
        answer = api.get(HARDWARE_API, {"cluster": cluster.name})
    assert time.monotonic() - started < 8  # the 3 s budget, not the source's 60 s
    assert answer.status_code == 503, answer.content[:300]
    body = answer.json()
    assert body["code"] == "data_source_unavailable"
    # A read-only token learns that the source did not answer, not where it is or what it said.
    text = answer.content.decode()
    assert "127.0.0.1" not in text and str(server.port) not in text and "staff_detail" not in body
    assert "Errno" not in text

    # Signed-in staff see the address. The source failed moments ago: the answer comes at
    # once, without dialling it again (the back-off).
    dialled = server.connections
    with must_finish_within(10):
        staff = client_as("operator").get(HARDWARE_API, {"cluster": cluster.name})
    assert server.connections == dialled
    assert staff.status_code == 503 and server.url in staff.json()["staff_detail"]


@pytest.mark.django_db
def test_a_huge_promql_answer_is_refused_before_it_is_parsed(settings, cluster, users):
    from rest_framework.test import APIClient

    pad = b"x" * (20 * 1024 * 1024)
    answer_body = b'{"status":"success","data":{"resultType":"vector","result":[]},"p":"' + pad
    answer_body += b'"}'

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()  # no length declared: the cap applies while reading
            self.wfile.write(answer_body)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        PromQLDataSource.objects.create(
            cluster=cluster, url=f"http://127.0.0.1:{server.server_port}", timeout_seconds=10
        )
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Bearer {_read_token(users)}")
        answer = api.get(HARDWARE_API, {"cluster": cluster.name})
    finally:
        server.shutdown()
        server.server_close()
    assert answer.status_code == 503, answer.content[:300]
    assert "PROMQL_MAX_RESPONSE_BYTES" in answer.json()["detail"]
