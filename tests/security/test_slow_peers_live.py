"""A trickling peer against the real processes (issue 26 §2): a Celery worker keeps running
its other tasks, and gunicorn keeps answering ``/healthz`` and answers 503 in time.

Before: one exporter trickling a byte a second held the worker's only process (ticks, gates,
heartbeats stopped until ``kill -9``); two dashboard requests to a trickling PromQL source
stalled ``/healthz`` and each hit gunicorn's 30 s timeout. The figures are printed for the
record (BENCHMARKS.md keeps them), not asserted tightly.
"""

from __future__ import annotations

import os
import threading
import time
import uuid

import pytest
import requests

from accounts.services.tokens import token_create
from cluster_portal.celery import app
from inventory.models import Cluster
from telemetry.models import ExporterTarget, Heartbeat, PromQLDataSource
from telemetry.tasks import heartbeat, scrape_target
from tests.security.test_gunicorn_bounded import workers_of
from tests.servers import TricklingServer, WebServer
from tests.workers import Worker, database_url_for_subprocess, redis_broker_url, wait_for


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_worker_scraping_a_trickling_exporter_runs_its_next_task_after_the_timeout(
    tmp_path, capsys
):
    broker = redis_broker_url()
    if broker is None:
        pytest.skip("Redis is not reachable; the real-worker test needs it")
    server = TricklingServer(mode="body", interval=1.0)
    cluster = Cluster.objects.create(name="trickle-worker", kind=Cluster.Kind.UNIFIED)
    target = ExporterTarget.objects.create(
        name="trickle", cluster=cluster, url=server.url + "/metrics", timeout_seconds=3
    )
    queue = f"test-{uuid.uuid4().hex[:8]}"
    worker = Worker(queue, broker, tmp_path, OUTBOUND_ALLOWED_NETWORKS="127.0.0.0/8")
    try:
        wait_for(lambda: Heartbeat.objects.filter(name=worker.name).exists(), 60, "worker start")
        with app.connection_for_write(broker) as conn:
            started = time.monotonic()
            scrape_target.apply_async((target.pk,), queue=queue, connection=conn)
            heartbeat.apply_async(queue=queue, connection=conn)
        # One process (solo pool): the heartbeat runs only once the scrape let go.
        wait_for(lambda: Heartbeat.objects.get(name=worker.name).beats >= 2, 20, "heartbeat")
        held = time.monotonic() - started
    finally:
        worker.stop()
        server.stop()
    target.refresh_from_db()
    assert "timed out after 3 s" in target.last_error, worker.output[-3000:]
    assert target.scrape_lease_until is None
    assert held < 10
    with capsys.disabled():
        print(f"\n[slow peers] a trickling exporter (timeout 3 s) held the worker {held:.1f} s")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_gunicorn_answers_healthz_and_503s_while_a_promql_source_trickles(tmp_path, users, capsys):
    server = TricklingServer(mode="body", interval=1.0, content_type="application/json")
    cluster = Cluster.objects.create(name="trickle-web", kind=Cluster.Kind.UNIFIED)
    PromQLDataSource.objects.create(cluster=cluster, url=server.url, timeout_seconds=60)
    token = token_create(
        name="reader", scopes=["read"], created_by=users["operator"], owner=users["operator"]
    ).plaintext
    web = WebServer(
        env={
            "DATABASE_URL": database_url_for_subprocess(),
            "PORTAL_VAR_DIR": str(tmp_path),
            "REDIS_URL": os.environ.get("REDIS_URL", ""),
            "OUTBOUND_ALLOWED_NETWORKS": "127.0.0.0/8",
            "PROMQL_WEB_BUDGET_SECONDS": "8",
            # Each request reads the source itself. (With the payload cache on, requests for
            # the same payload wait for its one builder instead, up to the budget: see README.)
            "DASHBOARD_CACHE_SECONDS": "0",
        },
        workers=1,
        threads=3,
    )
    results: list[tuple[int, float]] = []

    def dashboard() -> None:
        began = time.monotonic()
        answer = requests.get(
            web.url + "/api/v1/dashboards/hardware/",
            params={"cluster": cluster.name},
            headers={"Authorization": f"Bearer {token}"},
            timeout=60,
        )
        results.append((answer.status_code, time.monotonic() - began, answer.text))

    try:
        requests.get(web.url + "/healthz", timeout=30)  # the worker has loaded the app
        before = workers_of(web.process.pid)
        callers = [threading.Thread(target=dashboard) for _ in range(4)]
        for caller in callers:
            caller.start()
            time.sleep(0.2)
        time.sleep(1.0)  # the slow reads are in flight now
        began = time.monotonic()
        health = requests.get(web.url + "/healthz", timeout=30)
        health_seconds = time.monotonic() - began
        for caller in callers:
            caller.join(40)
        after = workers_of(web.process.pid)
    finally:
        web.stop()
        server.stop()
    assert health.status_code == 200 and health_seconds < 2, (health_seconds, web.output[-2000:])
    assert len(results) == 4
    assert all(code == 503 for code, _, _ in results), results
    assert all("127.0.0.1" not in text for _, _, text in results)
    slowest = max(seconds for _, seconds, _ in results)
    assert slowest < 15
    assert set(after) == set(before), web.output  # no worker was killed by gunicorn's timeout
    with capsys.disabled():
        print(
            f"\n[slow peers] /healthz answered in {health_seconds:.2f} s while 4 dashboard "
            f"reads waited on a trickling PromQL source; slowest 503 after {slowest:.1f} s"
        )


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_delivery_has_already_counted_the_attempt(tmp_path):
    import signal

    from rollout.models import WebhookDelivery, WebhookSubscription
    from rollout.services.webhooks import webhook_attempt_claim
    from rollout.tasks import deliver_webhook

    broker = redis_broker_url()
    if broker is None:
        pytest.skip("Redis is not reachable; the real-worker test needs it")
    server = TricklingServer(mode="headers", interval=1.0)
    subscription = WebhookSubscription.objects.create(
        name="slow", url=server.url + "/hook", events=["transition"], secret="s3cret"
    )
    delivery = WebhookDelivery.objects.create(
        subscription=subscription, event="transition", payload={"event": "transition"}
    )
    queue = f"test-{uuid.uuid4().hex[:8]}"
    worker = Worker(
        queue,
        broker,
        tmp_path,
        OUTBOUND_ALLOWED_NETWORKS="127.0.0.0/8",
        WEBHOOK_DEADLINE_SECONDS="60",
    )
    try:
        wait_for(lambda: Heartbeat.objects.filter(name=worker.name).exists(), 60, "worker start")
        with app.connection_for_write(broker) as conn:
            deliver_webhook.apply_async((delivery.pk,), queue=queue, connection=conn)
        wait_for(lambda: server.connections >= 1, 30, "the POST to reach the receiver")
        worker.stop(signal.SIGKILL)  # mid-request, as an OOM kill or kill -9 would
    finally:
        worker.stop()
        server.stop()
    delivery.refresh_from_db()
    # Recorded before the request: the redelivery counts on from 1, not from 0 again.
    assert delivery.attempts == 1 and delivery.status == "pending"
    assert delivery.attempt_lease_until is not None and delivery.last_attempt_at is not None
    # Until the lease lapses nobody sends it again (the sweep picks it up afterwards).
    assert webhook_attempt_claim(delivery_id=delivery.pk) is None
