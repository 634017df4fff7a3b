"""The broker goes away under a ticking worker: ticks resume afterwards and the gap is recorded.

A thread plays beat (one scheduler tick per interval at the run's current sequence, errors
swallowed as beat logs and goes on); a real worker consumes the private Redis. Redis is
stopped for several intervals and started again, empty, on the same port.
"""

from __future__ import annotations

import threading
import time
import uuid
from datetime import UTC, datetime

import pytest
from django.db import connection

from cluster_portal.celery import app
from inventory.models import Cluster
from simulation.engine import default_scenario
from simulation.models import TwinGap, TwinRun
from simulation.services import twin_run_create
from simulation.services.gaps import GAP_METRIC
from simulation.tasks import advance_run
from telemetry.models import Frame, Sample
from tests.workers import Worker, wait_for

TICK_SECONDS = 1
OUTAGE_SECONDS = 6


class BeatThread(threading.Thread):
    """Queues ``advance_run(run, current seq)`` every tick interval, like schedule_ticks."""

    def __init__(self, run_id: int, queue: str, broker: str) -> None:
        super().__init__(daemon=True)
        self.run_id, self.queue, self.broker = run_id, queue, broker
        self.stopped = threading.Event()
        self.sent = self.failed = 0

    def run(self) -> None:
        try:
            while not self.stopped.wait(TICK_SECONDS):
                seq = TwinRun.objects.values_list("tick_seq", flat=True).get(pk=self.run_id)
                try:
                    with app.connection_for_write(self.broker) as conn:
                        advance_run.apply_async(
                            (self.run_id, seq),
                            queue=self.queue,
                            connection=conn,
                            retry_policy={"max_retries": 0},
                        )
                    self.sent += 1
                except Exception:  # noqa: BLE001 - the broker is down: beat logs and goes on
                    self.failed += 1
        finally:
            connection.close()


def raw_points_between(cluster: Cluster, start: datetime, end: datetime) -> int:
    samples = Sample.objects.filter(entity__cluster=cluster, ts__gt=start, ts__lt=end)
    frames = Frame.objects.filter(layout__cluster=cluster, resolution=0, ts__gt=start, ts__lt=end)
    return samples.count() + frames.count()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_after_a_broker_outage_ticks_resume_and_the_gap_is_recorded_not_filled(
    tmp_path, private_redis, client_as
):
    cluster = Cluster.objects.create(name="gap-test", kind=Cluster.Kind.UNIFIED)
    run = twin_run_create(
        name="gap-test", cluster=cluster, scenario=default_scenario(cards=64, seed=4)
    )
    queue = f"gap-{uuid.uuid4().hex[:8]}"
    worker = Worker(
        queue,
        private_redis.url,
        tmp_path,
        TWIN_TICK_SECONDS=str(TICK_SECONDS),
        CELERY_VISIBILITY_TIMEOUT="5",
    )
    beat = BeatThread(run.pk, queue, private_redis.url)
    try:
        wait_for(lambda: worker.saw("ready."), 60, "the worker to start")
        beat.start()
        wait_for(
            lambda: TwinRun.objects.get(pk=run.pk).tick_seq >= 3, 60, "ticks before the outage"
        )

        down_at = time.time()
        private_redis.stop()
        time.sleep(2)  # a tick already running when the broker went away may still commit
        before = TwinRun.objects.get(pk=run.pk)
        time.sleep(max(0.0, down_at + OUTAGE_SECONDS - time.time()))
        assert TwinRun.objects.get(pk=run.pk).tick_seq == before.tick_seq  # nothing ticked
        assert worker.process.poll() is None, worker.output[-2000:]

        private_redis.start()  # same port, empty: whatever was queued is gone
        up_at = time.time()
        wait_for(
            lambda: TwinRun.objects.get(pk=run.pk).tick_seq > before.tick_seq,
            60,
            "the worker to reconnect and commit a tick",
        )
        time.sleep(2 * TICK_SECONDS)  # and keep ticking
    finally:
        beat.stopped.set()
        beat.join(10)
        worker.stop()

    after = TwinRun.objects.get(pk=run.pk)
    assert after.tick_seq > before.tick_seq + 1, worker.output[-3000:]
    assert beat.failed > 0  # beat really could not deliver during the outage

    # Exactly one gap, from the last tick before the outage to the first data after it.
    gap = TwinGap.objects.get(run=run)
    assert gap.seq == before.tick_seq + 1
    assert gap.started_at == before.last_tick_at
    assert gap.started_at.timestamp() <= down_at + 2
    assert gap.ended_at.timestamp() >= up_at - TICK_SECONDS
    outage = up_at - down_at
    print(
        f"outage {outage:.1f}s, gap {gap.seconds:.1f}s, resumed {gap.ended_at.timestamp() - up_at:.1f}s after Redis"
    )
    assert outage - 2 <= gap.seconds <= outage + 40, (gap.seconds, outage)
    assert gap.missed_ticks >= OUTAGE_SECONDS // TICK_SECONDS - 2

    # Nothing was fabricated for the outage window: no raw point inside the gap, and the
    # engine advanced one tick per committed tick (no catch-up stepping).
    assert raw_points_between(cluster, gap.started_at, gap.ended_at) == 0
    assert raw_points_between(cluster, gap.ended_at, datetime.now(UTC)) > 0
    assert after.sim_time == after.tick_seq * after.steps_per_tick * 60.0

    # The gap is telemetry too (stamped where data resumes), and operators see it.
    point = Sample.objects.get(entity__cluster=cluster, metric__name=GAP_METRIC[0])
    assert point.ts == gap.ended_at and point.value == pytest.approx(gap.seconds)
    operator = client_as("operator")
    twin_page = operator.get("/twin/").content.decode()
    assert "1 gap" in twin_page and f"({gap.seconds:.0f} s)" in twin_page
    status_page = operator.get("/status/?partial=1").content.decode()
    assert "gap-test" in status_page and f">{gap.seconds:.0f}<" in status_page
