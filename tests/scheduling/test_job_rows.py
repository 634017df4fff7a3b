"""The sync's two write paths — COPY into a staging table and one merge on PostgreSQL, bulk
statements elsewhere (SQLite, the demo) — store the same jobs and intervals, write only what
changed, and leave nothing behind when the sync fails half-way."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cluster_portal.web.copy_upsert import copy_available
from scheduling.models import SchedulerJob
from telemetry.models import AttributionInterval, AttributionKind
from tests.scheduling.holdings import job, site, store

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
JOB_COLUMNS = (
    "job_id", "tenant_id", "name", "account", "state", "nodes", "allocation", "gpus",
    "start_time", "end_time", "synced_at",
)  # fmt: skip


def _force_bulk(monkeypatch) -> None:
    monkeypatch.setattr("scheduling.services.job_rows.copy_available", lambda: False)
    monkeypatch.setattr("telemetry.ingest.scheduler_attribution.copy_available", lambda: False)


def _play(s) -> list[int]:
    """Four syncs: jobs start, one is cancelled and one starts on its card, one runs and ends
    between syncs, then the same answer again. Answers the job rows written by each."""
    minute = timedelta(minutes=1)
    running = [
        job(1, cards={"gpu-001": [0, 1]}, start=T0),
        job(2, cards={"gpu-002": [0]}, start=T0),
    ]
    cancelled = job(1, state="CANCELLED", cards={"gpu-001": [0, 1]}, start=T0, end=T0 + 3 * minute)
    started = job(3, account="tenant-b", cards={"gpu-001": [0]}, start=T0 + 4 * minute)
    between = job(
        4, state="COMPLETED", cards={"gpu-002": [3]}, start=T0 + minute, end=T0 + 2 * minute
    )
    written = []
    for n, answer in enumerate(
        [running, [cancelled, running[1], started, between], [cancelled, running[1], started]]
    ):
        store(s.source, answer, T0 + (5 + n) * minute)
        written.append(
            SchedulerJob.objects.filter(source=s.source, synced_at=T0 + (5 + n) * minute).count()
        )
    store(s.source, [cancelled, running[1], started], T0 + 9 * minute)
    written.append(SchedulerJob.objects.filter(source=s.source, synced_at=T0 + 9 * minute).count())
    return written


def _state(s) -> tuple[list[tuple], list[tuple]]:
    key = {e.pk: k for k, e in s.entities.items()}
    jobs = sorted(SchedulerJob.objects.filter(source=s.source).values_list(*JOB_COLUMNS))
    intervals = sorted(
        (key[r.entity_id], r.hpc_job, r.tenant_id, r.started_at, r.last_seen_at, r.ended_at,
         r.observations, r.step_seconds, r.namespace, r.pod)
        for r in AttributionInterval.objects.filter(
            cluster=s.cluster, kind=AttributionKind.SCHEDULER
        )
    )  # fmt: skip
    return jobs, intervals


def test_the_copy_path_and_the_bulk_path_store_the_same_jobs_and_intervals(tenants, monkeypatch):
    assert copy_available()  # PostgreSQL with psycopg 3, as in CI
    fast = site(tenants, "slurm-copy")
    written_fast = _play(fast)
    _force_bulk(monkeypatch)
    slow = site(tenants, "slurm-bulk")
    written_slow = _play(slow)
    assert _state(fast) == _state(slow)
    # New jobs, then the three that changed, then none; the last answer is a repeat.
    assert written_fast == written_slow == [2, 3, 0, 0]
    jobs, intervals = _state(fast)
    assert len(jobs) == 4 and len(intervals) == 5


def test_a_sync_that_fails_after_the_jobs_are_staged_writes_nothing(tenants, monkeypatch):
    s = site(tenants)
    store(s.source, [job(1, cards={"gpu-001": [0]}, start=T0)], T0 + timedelta(minutes=1))
    s.source.refresh_from_db()
    before = _state(s), s.source.jobs_update_time
    assert before[1] is not None

    def killed(**_kwargs):
        raise RuntimeError("worker killed")

    monkeypatch.setattr("scheduling.services.sync.scheduler_attribution_sync", killed)
    with pytest.raises(RuntimeError):
        store(
            s.source,
            [job(1, state="COMPLETED", cards={"gpu-001": [0]}, start=T0, end=T0), job(2)],
            T0 + timedelta(minutes=2),
        )
    s.source.refresh_from_db()
    assert (_state(s), s.source.jobs_update_time) == before
