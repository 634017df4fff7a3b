"""Celery: the registered tasks, the beat schedule, and a real worker process over Redis."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from cluster_portal.celery import app
from cluster_portal.env import tcp_reachable
from cluster_portal.schedule import BEAT_SCHEDULE
from monitoring.models import Heartbeat
from monitoring.tasks import heartbeat

ROOT = Path(__file__).resolve().parents[2]

# Update deliberately when adding a task: a rename silently orphans queued messages.
EXPECTED_TASKS = {
    "monitoring.compact_rollups",
    "monitoring.evaluate_alerts",
    "monitoring.heartbeat",
    "monitoring.scrape_due_targets",
    "monitoring.scrape_target",
    "monitoring.telemetry_retention",
    "simulation.advance_pool",
    "simulation.advance_run",
    "simulation.commit_tick",
    "simulation.schedule_pool_ticks",
    "simulation.schedule_ticks",
    "simulation.stage_tick_part",
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


def test_beat_uses_the_schedule_module():
    app.finalize()
    assert app.conf.beat_schedule == BEAT_SCHEDULE


def test_tasks_are_acknowledged_late_and_requeued_when_a_worker_dies():
    assert app.conf.task_acks_late is True
    assert app.conf.task_reject_on_worker_lost is True
    assert app.tasks["monitoring.heartbeat"].acks_late is True


def redis_broker_url() -> str | None:
    url = settings.CELERY_BROKER_URL
    if url.startswith("redis://"):
        return url
    if tcp_reachable("127.0.0.1", 6379):
        return "redis://127.0.0.1:6379/0"
    return None


def database_url_for_subprocess() -> str:
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    host = db.get("HOST") or "127.0.0.1"
    user = db.get("USER") or "postgres"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{user}{password}@{host}:{db.get('PORT') or 5432}/{db['NAME']}"


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_process_runs_the_heartbeat_task_over_redis(tmp_path):
    broker = redis_broker_url()
    if broker is None:
        pytest.skip("Redis is not reachable on 127.0.0.1:6379; the real-worker test needs it")
    queue = f"test-{uuid.uuid4().hex[:8]}"
    worker_name = f"{queue}@test"
    environment = {
        **os.environ,
        "CELERY_BROKER_URL": broker,
        "DATABASE_URL": database_url_for_subprocess(),
        "PORTAL_VAR_DIR": str(tmp_path),
    }
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "cluster_portal",
            "worker",
            "--pool=solo",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-Q",
            queue,
            "-n",
            worker_name,
            "--loglevel=INFO",
        ],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        # worker_ready records the first heartbeat once the worker consumes from the queue.
        wait_for(lambda: Heartbeat.objects.filter(name=worker_name).exists(), 60, "worker to start")
        with app.connection_for_write(broker) as conn:
            heartbeat.apply_async(queue=queue, connection=conn)
        wait_for(lambda: Heartbeat.objects.get(name=worker_name).beats >= 2, 30, "task to run")
    finally:
        worker.terminate()
        try:
            output, _ = worker.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
            output, _ = worker.communicate()
    assert "monitoring.heartbeat" in output and "succeeded" in output, output[-3000:]
