"""A real worker SIGKILLed mid-tick: nothing of the tick is visible, and it completes once later."""

from __future__ import annotations

import signal
import time
import uuid

import pytest

from cluster_portal.celery import app
from inventory.models import Cluster
from simulation.engine import default_scenario
from simulation.models import TwinRun, TwinTick
from simulation.services import twin_run_create
from simulation.tasks import advance_run
from telemetry.store.frame_close import frames_rollups_close
from tests.simulation.conftest import frame_values, stored_values
from tests.workers import Worker, redis_broker_url, wait_for


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_tick_leaves_nothing_and_the_tick_completes_exactly_once(tmp_path):
    broker = redis_broker_url()
    if broker is None:
        pytest.skip("Redis is not reachable on 127.0.0.1:6379; this test needs a real broker")
    cluster = Cluster.objects.create(name="kill-test", kind=Cluster.Kind.UNIFIED)
    run = twin_run_create(
        name="kill-test", cluster=cluster, scenario=default_scenario(cards=256, seed=2)
    )
    queue = f"kill-{uuid.uuid4().hex[:8]}"
    first = Worker(
        queue, broker, tmp_path, TWIN_TICK_FAULT_PAUSE_SECONDS="60", CELERY_VISIBILITY_TIMEOUT="2"
    )
    second = None
    try:
        wait_for(lambda: first.saw("ready."), 60, "first worker to start")
        with app.connection_for_write(broker) as conn:
            advance_run.apply_async((run.pk, 0), queue=queue, connection=conn)
        wait_for(lambda: first.saw("simulation.advance_run"), 30, "the tick to be received")
        time.sleep(4)  # inside the fault-injection pause: telemetry written, not committed
        first.stop(signal.SIGKILL)
        assert stored_values(cluster) == 0
        run.refresh_from_db()
        assert run.tick_seq == 0

        second = Worker(queue, broker, tmp_path, CELERY_VISIBILITY_TIMEOUT="2")
        wait_for(lambda: TwinTick.objects.filter(run=run).exists(), 90, "the redelivered tick")
        time.sleep(2)  # a duplicate, if any, would land now
    finally:
        first.stop(signal.SIGKILL)
        if second is not None:
            second.stop()
    run.refresh_from_db()
    assert run.tick_seq == 1
    tick = TwinTick.objects.get(run=run)
    assert stored_values(cluster) == tick.samples > 0
    assert TwinRun.objects.get(pk=run.pk).sim_time == 60.0
    # Every tier of the frames holds the committed tick's values once: the minute tier as
    # written, the coarser ones once compaction has folded the closed minute.
    frames_rollups_close(now=time.time() + 120)
    raw = frame_values(cluster, 0)
    assert raw > 0
    assert [frame_values(cluster, r) for r in (60, 900, 3600, 86400)] == [raw] * 4
