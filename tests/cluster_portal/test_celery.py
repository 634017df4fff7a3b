"""Celery: the registered tasks, the beat schedule, and a real worker process over Redis."""

from __future__ import annotations

import uuid

import pytest

from cluster_portal.celery import app
from cluster_portal.schedule import BEAT_SCHEDULE
from telemetry.models import Heartbeat
from telemetry.tasks import heartbeat
from tests.workers import Worker, redis_broker_url, wait_for

# Update deliberately when adding a task: a rename silently orphans queued messages.
EXPECTED_TASKS = {
    "cost.close_ledger_hours",
    "monitoring.compact_rollups",
    "monitoring.evaluate_alerts",
    "monitoring.heartbeat",
    "monitoring.promql_sources_sync",
    "monitoring.scrape_due_targets",
    "monitoring.scrape_target",
    "monitoring.telemetry_retention",
    "rollout.deliver_webhook",
    "rollout.measure_analyses",
    "rollout.send_router_intents",
    "rollout.sweep_webhook_deliveries",
    "scheduling.calendar_windows_follow",
    "scheduling.scheduler_sources_sync",
    "simulation.advance_pool",
    "simulation.advance_run",
    "simulation.calendar_whatif",
    "simulation.run_whatif",
    "simulation.schedule_pool_ticks",
    "simulation.schedule_ticks",
    "simulation.sweep_whatif_runs",
}


def project_tasks() -> set[str]:
    app.loader.import_default_modules()
    return {name for name in app.tasks if not name.startswith("celery.")}


def test_registered_task_names_match_the_snapshot():
    assert project_tasks() == EXPECTED_TASKS


def test_every_periodic_task_is_registered_and_expires():
    registered = project_tasks()
    for entry_name, entry in BEAT_SCHEDULE.items():
        assert entry["task"] in registered, entry_name
        assert entry["options"]["expires"] > 0, f"{entry_name} must expire"
        assert entry["schedule"] > 0


# Tasks that call out to a peer (exporter, webhook receiver, PromQL server) or run long:
# each has its own wall-clock deadline, and these limits are the backstop.
TIME_LIMITED = (
    "monitoring.scrape_target",
    "monitoring.promql_sources_sync",
    "scheduling.scheduler_sources_sync",
    "scheduling.calendar_windows_follow",
    "monitoring.evaluate_alerts",
    "rollout.deliver_webhook",
    "rollout.measure_analyses",
    "rollout.send_router_intents",
    "simulation.run_whatif",
    "simulation.calendar_whatif",
)


@pytest.mark.parametrize("name", TIME_LIMITED)
def test_tasks_that_reach_a_peer_have_soft_and_hard_time_limits(name):
    project_tasks()
    task = app.tasks[name]
    assert task.soft_time_limit and task.time_limit
    assert task.soft_time_limit < task.time_limit


def test_beat_uses_the_schedule_module():
    app.finalize()
    assert app.conf.beat_schedule == BEAT_SCHEDULE


def test_tasks_are_acknowledged_late_and_requeued_when_a_worker_dies():
    assert app.conf.task_acks_late is True
    assert app.conf.task_reject_on_worker_lost is True
    assert app.tasks["monitoring.heartbeat"].acks_late is True


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_process_runs_the_heartbeat_task_over_redis(tmp_path):
    broker = redis_broker_url()
    if broker is None:
        pytest.skip("Redis is not reachable on 127.0.0.1:6379; the real-worker test needs it")
    queue = f"test-{uuid.uuid4().hex[:8]}"
    worker = Worker(queue, broker, tmp_path)
    try:
        # worker_ready records the first heartbeat once the worker consumes from the queue.
        wait_for(lambda: Heartbeat.objects.filter(name=worker.name).exists(), 60, "worker to start")
        with app.connection_for_write(broker) as conn:
            heartbeat.apply_async(queue=queue, connection=conn)
        wait_for(lambda: Heartbeat.objects.get(name=worker.name).beats >= 2, 30, "task to run")
    finally:
        worker.stop()
    assert "monitoring.heartbeat" in worker.output and "succeeded" in worker.output, worker.output[
        -3000:
    ]
