"""Who holds which card, from the scheduler (issue 32 item 2): a running job's GRES indices
become ``scheduler`` attribution intervals on the inventory cards of those indices, with the
job and its account's tenant; re-syncs extend rather than duplicate them; a cancelled job
closes them at its end; an unmapped account or a card the inventory lacks is counted, never
attributed; and the precedence rule: the scheduler names the holder, the ledger still bills
exporter-label intervals only."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from scheduling.models import SchedulerJob
from telemetry.ingest.attribution import Holder, Observation, attribution_record
from telemetry.models import AttributionInterval, AttributionKind
from telemetry.read import attribution_held_by_hour, card_holdings, holder_now
from tests.scheduling.holdings import job, site, store

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)


def _scheduler_rows(cluster):
    return AttributionInterval.objects.filter(cluster=cluster, kind=AttributionKind.SCHEDULER)


def test_a_running_jobs_gres_indices_become_scheduler_intervals_with_its_tenant(tenants):
    s = site(tenants)
    store(
        s.source,
        [job(41, cards={"gpu-001": [0, 1], "gpu-002": [3]}, start=T0)],
        T0 + timedelta(minutes=5),
    )
    rows = _scheduler_rows(s.cluster)
    assert {(r.entity_id, r.hpc_job, r.tenant_id) for r in rows} == {
        (s.entities[("gpu-001", 0)].pk, "41", tenants["acme"].pk),
        (s.entities[("gpu-001", 1)].pk, "41", tenants["acme"].pk),
        (s.entities[("gpu-002", 3)].pk, "41", tenants["acme"].pk),
    }
    assert all(r.started_at == T0 and r.ended_at is None for r in rows)
    assert {r.host for r in rows} == {"gpu-001", "gpu-002"}


def test_re_syncs_extend_the_intervals_and_never_duplicate_them(tenants):
    s = site(tenants)
    answer = [job(7, account="tenant-b", cards={"gpu-001": [2]}, start=T0)]
    store(s.source, answer, T0 + timedelta(minutes=1))
    store(s.source, answer, T0 + timedelta(minutes=2))
    result = store(s.source, None, T0 + timedelta(minutes=3))  # slurmrestd: 304, nothing new
    (row,) = _scheduler_rows(s.cluster)
    assert row.last_seen_at == T0 + timedelta(minutes=3) and row.ended_at is None
    assert row.tenant_id == tenants["panda"].pk and result.intervals_started == 0


def test_a_cancelled_job_closes_its_intervals_at_its_end(tenants):
    s = site(tenants)
    store(s.source, [job(9, cards={"gpu-001": [0, 1]}, start=T0)], T0 + timedelta(minutes=1))
    ended = T0 + timedelta(minutes=4)
    result = store(
        s.source,
        [job(9, state="CANCELLED", cards={"gpu-001": [0, 1]}, start=T0, end=ended)],
        T0 + timedelta(minutes=6),
    )
    rows = list(_scheduler_rows(s.cluster))
    assert len(rows) == 2 and result.intervals_ended == 2
    assert all(r.ended_at == ended and r.last_seen_at <= ended for r in rows)
    # The next holder of the same card starts its own interval beside the closed one.
    store(s.source, [job(10, cards={"gpu-001": [0]}, start=ended)], T0 + timedelta(minutes=7))
    assert _scheduler_rows(s.cluster).filter(hpc_job="10", ended_at__isnull=True).count() == 1


def test_a_job_that_started_and_ended_between_two_syncs_still_gets_closed_intervals(tenants):
    s = site(tenants)
    start, end = T0 + timedelta(minutes=1), T0 + timedelta(minutes=3)
    answer = [job(15, state="COMPLETED", cards={"gpu-002": [0, 1]}, start=start, end=end)]
    first = store(s.source, answer, T0 + timedelta(minutes=5))
    store(s.source, answer, T0 + timedelta(minutes=6))  # seen again: nothing added
    rows = list(_scheduler_rows(s.cluster))
    assert first.intervals_started == 2 and len(rows) == 2
    assert all((r.started_at, r.ended_at, r.hpc_job) == (start, end, "15") for r in rows)


def test_a_job_that_vanishes_from_the_scheduler_ends_at_the_sync_that_missed_it(tenants):
    s = site(tenants)
    store(s.source, [job(3, cards={"gpu-002": [1]}, start=T0)], T0 + timedelta(minutes=1))
    s.source.jobs.all().delete()  # purged from slurmctld's memory before the portal saw its end
    store(s.source, [], T0 + timedelta(minutes=2))
    (row,) = _scheduler_rows(s.cluster)
    assert row.ended_at == T0 + timedelta(minutes=2)


def test_an_unmapped_account_is_refused_counted_and_never_attributed(tenants):
    s = site(tenants)
    result = store(
        s.source,
        [job(5, account="tenant-z", cards={"gpu-001": [0]}, start=T0)],
        T0 + timedelta(minutes=1),
    )
    assert result.refused == {"account 'tenant-z' has no tenant mapping": 1}
    assert not _scheduler_rows(s.cluster).exists()


def test_cards_the_inventory_lacks_are_counted_not_guessed(tenants):
    s = site(tenants)
    answer = [job(6, cards={"gpu-001": [0, 7], "gpu-099": [0]}, start=T0)]
    result = store(s.source, answer, T0 + timedelta(minutes=1))
    assert result.unattributed == {
        "gpu-001 has no gpu card with index 7": 1,
        "node gpu-099 is not in the inventory": 1,
    }
    s.source.refresh_from_db()
    assert s.source.last_unattributed == result.unattributed
    assert [r.entity_id for r in _scheduler_rows(s.cluster)] == [s.entities[("gpu-001", 0)].pk]


def test_the_scheduler_names_the_holder_and_the_ledger_bills_exporter_intervals_only(tenants):
    s = site(tenants)
    entity = s.entities[("gpu-001", 0)]
    # dcgm-exporter labels the card with a pod for ten minutes (two observations).
    pod = Holder(namespace="infer", pod="vllm-0", host="gpu-001")
    attribution_record(
        cluster_id=s.cluster.pk,
        observations=[Observation(entity.pk, (T0 + timedelta(minutes=m)).timestamp(), pod)
                      for m in (0, 10)],
    )  # fmt: skip
    now = T0 + timedelta(minutes=10)
    store(s.source, [job(77, cards={"gpu-001": [0]}, start=T0)], now)
    held = card_holdings(start=T0, end=now, accelerator_ids=[s.cards[("gpu-001", 0)].pk])
    assert {h.kind for h in held} == {"exporter", "scheduler"}
    current = holder_now(held, now)
    assert (current.kind, current.holder, current.tenant) == ("scheduler", "77", "Acme Robotics")
    billed = attribution_held_by_hour(
        cluster_id=s.cluster.pk, bindings=[("job", '{hpc_job="77"}'), ("pod", '{pod="vllm-0"}')],
        start=T0, end=T0 + timedelta(hours=1),
    )  # fmt: skip
    assert billed.card_seconds[0][0] == 0.0  # the scheduler interval is not billed
    assert billed.card_seconds[0][1] > 0.0


def test_exporter_labels_seen_free_do_not_end_the_schedulers_interval(tenants):
    s = site(tenants)
    entity = s.entities[("gpu-002", 2)]
    store(s.source, [job(88, cards={"gpu-002": [2]}, start=T0)], T0 + timedelta(minutes=1))
    attribution_record(
        cluster_id=s.cluster.pk,
        observations=[Observation(entity.pk, (T0 + timedelta(minutes=2)).timestamp(), Holder())],
    )
    (row,) = _scheduler_rows(s.cluster)
    assert row.ended_at is None


def test_gpu_and_npu_indices_of_one_node_name_different_cards(tenants):
    """Slurm numbers each GRES name from 0: gpu 0 and npu 0 of one node are two cards."""
    from inventory.models import Accelerator
    from tests.factories import EntityFactory

    s = site(tenants)
    node = s.cards[("gpu-001", 0)].node
    npu = Accelerator.objects.create(
        node=node, index=0, vendor_id="vdie-0", model_name="Ascend910B"
    )
    npu_entity = EntityFactory(cluster=s.cluster, key="gpu-001/npu0", accelerator=npu)
    record = job(21, cards={"gpu-001": [0]}, start=T0)
    record.allocation[0]["cards"].append({"name": "npu", "type": "910b", "indices": [0]})
    result = store(s.source, [record], T0 + timedelta(minutes=1))
    assert result.unattributed == {}
    assert {r.entity_id for r in _scheduler_rows(s.cluster)} == {
        s.entities[("gpu-001", 0)].pk,
        npu_entity.pk,
    }


@pytest.mark.slow
def test_a_real_slurm_jobs_cards_are_attributed_and_its_cancellation_ends_them(
    slurm, tenants, settings, monkeypatch
):
    """The one live check: a real ``sbatch --gres=gpu:2`` job on the run's Slurm 22.05."""
    import time

    from scheduling.models import SchedulerJob, SchedulerSource
    from scheduling.services.sync import scheduler_source_sync

    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    monkeypatch.setenv("PORTAL_TEST_SLURM_JWT", slurm.token)
    s = site(tenants)
    SchedulerSource.objects.filter(pk=s.source.pk).update(
        base_url=slurm.url, token_env="PORTAL_TEST_SLURM_JWT", timeout_seconds=20, enabled=True
    )
    s.source.refresh_from_db()

    def sync_until(predicate) -> None:
        deadline = time.monotonic() + 90
        while not predicate() and time.monotonic() < deadline:
            scheduler_source_sync(source=s.source)
            time.sleep(0.5)

    job_id = slurm.sbatch("-A", "tenant-a", "--gres=gpu:2", "--wrap", "sleep 300")
    try:
        slurm.wait_state(job_id, {"RUNNING"})
        sync_until(lambda: _scheduler_rows(s.cluster).filter(hpc_job=str(job_id)).count() == 2)
        row = SchedulerJob.objects.get(source=s.source, job_id=job_id)
        (per_node,) = row.allocation
        wanted = {s.entities[(per_node["node"], i)].pk for i in per_node["cards"][0]["indices"]}
        intervals = _scheduler_rows(s.cluster).filter(hpc_job=str(job_id))
        assert {r.entity_id for r in intervals} == wanted
        assert all(r.tenant_id == tenants["acme"].pk and r.ended_at is None for r in intervals)
    finally:
        slurm.scancel(job_id)
    sync_until(
        lambda: SchedulerJob.objects.filter(
            source=s.source, job_id=job_id, state="CANCELLED", end_time__isnull=False
        ).exists()
    )
    row = SchedulerJob.objects.get(source=s.source, job_id=job_id)
    intervals = list(_scheduler_rows(s.cluster))
    assert row.end_time is not None, (row.state, row.end_time)
    # Ended at the job's end (or, had a sync seen it gone before its end time was reported, at
    # that sync: within a few seconds of it).
    assert all(r.ended_at is not None for r in intervals)
    assert all(abs((r.ended_at - row.end_time).total_seconds()) <= 10 for r in intervals)


def test_a_re_sync_writes_only_the_jobs_that_changed(tenants):
    s = site(tenants)
    start = timezone.now().replace(microsecond=0) - timedelta(hours=1)
    first, later = start + timedelta(minutes=10), start + timedelta(minutes=20)
    jobs = [
        job(1, cards={"gpu-001": [0]}, start=start),
        job(2, cards={"gpu-001": [1]}, start=start),
    ]
    store(s.source, jobs, first)
    ended = job(2, state="COMPLETED", cards={"gpu-001": [1]}, start=start, end=later)
    with CaptureQueriesContext(connection) as captured:
        store(s.source, [jobs[0], ended], later)
    job_writes = [
        q["sql"] for q in captured.captured_queries
        if q["sql"].startswith(("INSERT", "UPDATE")) and '"scheduling_schedulerjob"' in q["sql"][:40]
    ]  # fmt: skip
    assert len(job_writes) == 1  # job 2 only, in one statement
    synced = dict(SchedulerJob.objects.values_list("job_id", "synced_at"))
    assert synced == {1: first, 2: later}
    assert SchedulerJob.objects.get(job_id=2).state == "COMPLETED"
