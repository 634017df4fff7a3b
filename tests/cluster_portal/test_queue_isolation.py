"""Ticks and gate measurements keep their schedule while outbound work is held by slow peers.

Issue 31 §8: one slow PromQL source plus one trickling tenant webhook receiver stopped twin
ticks and gate measurements for ~160 s, because every task shared the same workers. Tasks are
now routed (``CELERY_TASK_ROUTES``): ticks and gates on their own queues, webhooks, scrapes,
PromQL syncs and router calls on ``outbound``. Replayed with the Procfile's two workers (each
one process here, so a held process is a held worker) on a private Redis.
"""

from __future__ import annotations

import re
import time

import pytest

from cluster_portal.celery import app
from inventory.models import Cluster
from rollout.models import WebhookDelivery, WebhookSubscription
from telemetry.models import Heartbeat, PromQLDataSource
from tests.servers import RedisServer, TricklingServer, redis_binary
from tests.workers import Worker, wait_for


def test_every_task_that_calls_a_peer_is_routed_to_the_outbound_queue():
    from django.conf import settings

    app.loader.import_default_modules()
    route = lambda name: app.amqp.router.route({}, name)["queue"].name  # noqa: E731
    for name in (
        "rollout.deliver_webhook",
        "rollout.sweep_webhook_deliveries",
        "rollout.send_router_intents",
        "monitoring.scrape_target",
        "monitoring.scrape_due_targets",
        "monitoring.promql_sources_sync",
        "scheduling.scheduler_sources_sync",
        "scheduling.calendar_windows_follow",
    ):
        assert route(name) == settings.OUTBOUND_QUEUE, name
    for name in ("simulation.advance_run", "simulation.advance_pool", "simulation.schedule_ticks"):
        assert route(name) == settings.TICK_QUEUE, name
    assert route("rollout.measure_analyses") == settings.GATE_QUEUE
    assert route("monitoring.evaluate_alerts") == "celery"


def test_the_procfile_runs_a_worker_for_ticks_and_gates_apart_from_outbound_work():
    from pathlib import Path

    procfile = (Path(__file__).resolve().parents[2] / "Procfile").read_text()
    queues = [set(q.split(",")) for q in re.findall(r"worker .*-Q (\S+)", procfile)]
    assert {"ticks", "gates"} in queues and {"outbound", "celery"} in queues


def _completed(worker: Worker, task: str) -> int:
    return sum(1 for line in worker.lines if task in line and "succeeded" in line)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_measurements_and_ticks_run_on_time_while_a_webhook_and_a_promql_source_trickle(
    tmp_path, capsys
):
    if redis_binary() is None:
        pytest.skip("redis-server is not installed")
    from rollout.tasks import deliver_webhook, measure_analyses
    from simulation.tasks import schedule_ticks
    from telemetry.tasks import promql_sources_sync

    redis = RedisServer().start()
    hook = TricklingServer(mode="headers", interval=1.0)
    promql = TricklingServer(mode="body", interval=1.0, content_type="application/json")
    cluster = Cluster.objects.create(name="trickle-queues", kind=Cluster.Kind.UNIFIED)
    PromQLDataSource.objects.create(cluster=cluster, url=promql.url, timeout_seconds=60)
    subscription = WebhookSubscription.objects.create(
        name="slow", url=hook.url + "/hook", events=["transition"], secret="s3cret"
    )
    delivery = WebhookDelivery.objects.create(
        subscription=subscription, event="transition", payload={"event": "transition"}
    )
    (tmp_path / "t").mkdir()
    (tmp_path / "o").mkdir()
    env = {"OUTBOUND_ALLOWED_NETWORKS": "127.0.0.0/8", "WEBHOOK_DEADLINE_SECONDS": "60"}
    timely = Worker("ticks,gates", redis.url, tmp_path / "t", name="timely", **env)
    outbound = Worker("outbound,celery", redis.url, tmp_path / "o", name="outbound", **env)
    try:
        for worker in (timely, outbound):
            wait_for(lambda w=worker: Heartbeat.objects.filter(name=w.name).exists(), 60, "start")
        with app.connection_for_write(redis.url) as conn:
            # Routed by CELERY_TASK_ROUTES, as beat and the services publish them.
            deliver_webhook.apply_async((delivery.pk,), connection=conn)
            promql_sources_sync.apply_async(connection=conn)
        wait_for(lambda: hook.connections >= 1, 30, "the webhook POST to reach its receiver")
        started = time.monotonic()
        lags = []
        with app.connection_for_write(redis.url) as conn:
            for beat in range(5):  # the beat's 10 s cadence, compressed to 1 s
                sent = time.monotonic()
                done = _completed(timely, "rollout.measure_analyses")
                measure_analyses.apply_async(connection=conn)
                schedule_ticks.apply_async(connection=conn)
                wait_for(
                    lambda d=done: _completed(timely, "rollout.measure_analyses") > d,
                    15,
                    f"measurement {beat} while outbound work is held",
                )
                lags.append(time.monotonic() - sent)
                time.sleep(max(0.0, 1.0 - (time.monotonic() - sent)))
        held = time.monotonic() - started
        still_held = hook.open >= 1
    finally:
        timely.stop()
        outbound.stop()
        hook.stop()
        promql.stop()
        redis.stop()
    assert still_held, "the receiver must still hold the outbound worker during the test"
    assert _completed(timely, "simulation.schedule_ticks") >= 5, timely.output[-3000:]
    assert "rollout.deliver_webhook[" not in timely.output  # "Task …[id] received" lines
    assert "rollout.deliver_webhook[" in outbound.output
    lags.sort()
    with capsys.disabled():
        print(
            f"\n[queues] 5 measurements + 5 tick dispatches ran in {held:.1f} s while a "
            f"trickling webhook held the outbound worker; measurement lag median "
            f"{lags[2]:.2f} s, max {lags[-1]:.2f} s"
        )
