"""PostgreSQL restarted under a running worker: the worker reconnects and no tick is lost.

The worker's database is a private PostgreSQL cluster (migrated by ``manage.py migrate`` in a
subprocess), restarted with ``pg_ctl restart -m fast``, which terminates every connection —
between two ticks, and in the middle of one.
"""

from __future__ import annotations

import signal
import uuid

import psycopg
import pytest

from cluster_portal.celery import app
from simulation.tasks import advance_run
from tests.faults.conftest import manage
from tests.workers import Worker, wait_for

SEED = """
from inventory.models import Cluster
from simulation.engine import default_scenario
from simulation.services import twin_run_create
cluster = Cluster.objects.create(name="{name}", kind=Cluster.Kind.UNIFIED)
run = twin_run_create(name="{name}", cluster=cluster, scenario=default_scenario(cards=64, seed=8))
print(run.pk)
"""


def seed_run(database_url: str, name: str) -> int:
    return int(manage(database_url, "shell", "-c", SEED.format(name=name)).strip().splitlines()[-1])


def query(database_url: str, sql: str, *params) -> tuple | None:
    """One row from the private database, or None while it is unreachable."""
    try:
        with psycopg.connect(database_url, connect_timeout=2) as conn:
            return conn.execute(sql, params).fetchone()
    except psycopg.OperationalError:
        return None


def tick_seq(database_url: str, run_id: int) -> int | None:
    row = query(database_url, "SELECT tick_seq FROM simulation_twinrun WHERE id = %s", run_id)
    return None if row is None else row[0]


def scheduler_ticks(database_url: str, run_id: int) -> int:
    row = query(
        database_url,
        "SELECT count(*) FROM simulation_twintick WHERE run_id = %s AND kind = 'scheduler'",
        run_id,
    )
    return row[0]


def send_tick(broker: str, queue: str, run_id: int, seq: int) -> None:
    with app.connection_for_write(broker) as conn:
        advance_run.apply_async((run_id, seq), queue=queue, connection=conn)


def start_worker(queue, broker, tmp_path, database_url, **env) -> Worker:
    worker = Worker(
        queue, broker, tmp_path, DATABASE_URL=database_url, CELERY_VISIBILITY_TIMEOUT="5", **env
    )
    wait_for(lambda: worker.saw("ready."), 60, "the worker to start")
    return worker


@pytest.mark.slow
def test_the_worker_reconnects_after_postgres_restarts_between_ticks(
    tmp_path, private_redis, private_postgres
):
    url = private_postgres.database_url
    run_id = seed_run(url, "pg-between")
    queue = f"pg-{uuid.uuid4().hex[:8]}"
    worker = start_worker(queue, private_redis.url, tmp_path, url)
    try:
        send_tick(private_redis.url, queue, run_id, 0)
        wait_for(lambda: tick_seq(url, run_id) == 1, 60, "the first tick")

        private_postgres.restart()  # the worker's persistent connection is now dead

        send_tick(private_redis.url, queue, run_id, 1)
        wait_for(lambda: tick_seq(url, run_id) == 2, 60, "a tick after the restart")
        assert worker.process.poll() is None, "the worker must survive a database restart"
    finally:
        worker.stop()
    assert scheduler_ticks(url, run_id) == 2
    # Health checks found the dead connection before the task used it: no failed attempt.
    assert not worker.saw("OperationalError"), worker.output[-3000:]


@pytest.mark.slow
def test_a_tick_cut_off_by_a_postgres_restart_is_retried_and_commits_once(
    tmp_path, private_redis, private_postgres
):
    url = private_postgres.database_url
    run_id = seed_run(url, "pg-mid-tick")
    queue = f"pgmid-{uuid.uuid4().hex[:8]}"
    # Every tick pauses 3 s after writing its telemetry, before committing.
    worker = start_worker(
        queue, private_redis.url, tmp_path, url, TWIN_TICK_FAULT_PAUSE_SECONDS="3"
    )
    try:
        send_tick(private_redis.url, queue, run_id, 0)
        wait_for(lambda: worker.saw("simulation.advance_run"), 30, "the tick to start")
        wait_for(
            lambda: query(url, "SELECT 1 FROM pg_stat_activity WHERE state LIKE 'idle in tr%%'"),
            20,
            "the tick to sit in its open transaction",
        )
        private_postgres.restart()  # kills the tick's connection mid-transaction
        assert tick_seq(url, run_id) == 0  # nothing of the cut-off tick was committed

        wait_for(lambda: tick_seq(url, run_id) == 1, 60, "the retried tick to commit")
        wait_for(lambda: worker.saw("retry: Retry in"), 10, "the retry to be logged")
        assert worker.process.poll() is None
    finally:
        worker.stop(signal.SIGTERM)
    assert scheduler_ticks(url, run_id) == 1
    # Exactly one tick's telemetry: the aborted attempt left nothing behind.
    (samples,) = query(
        url,
        "SELECT count(*) FROM monitoring_sample s JOIN monitoring_entity e ON e.id = s.entity_id"
        " JOIN monitoring_cluster c ON c.id = e.cluster_id WHERE c.name = 'pg-mid-tick'",
    )
    (sparse,) = query(
        url,
        "SELECT samples FROM simulation_twintick t WHERE run_id = %s",
        run_id,
    )
    assert 0 < samples <= sparse
