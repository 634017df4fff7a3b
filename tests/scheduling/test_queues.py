"""Queues (issue 32 item 5): pending jobs per partition with their reason and the scheduler's
estimated start (from v0.0.38's ``start_time`` of a pending job), and wait-time percentiles
(P50/P90 of submit → start) per tenant and per hour of day over the last 7 days; customers
see only their own tenant's."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from django.utils import timezone

from inventory.models import Cluster
from scheduling.models import SchedulerJob, SchedulerSource
from scheduling.selectors.queues import pending_by_partition, wait_percentiles
from scheduling.services.sources import scheduler_account_mapping_create, scheduler_source_create
from scheduling.services.sync import scheduler_source_sync
from scheduling.slurm import v0_0_38
from tests.access import ApiAccessCases

NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)


def _source(name: str = "slurm-q") -> SchedulerSource:
    cluster, _ = Cluster.objects.get_or_create(name=name, defaults={"kind": "unified"})
    return scheduler_source_create(
        cluster=cluster, base_url="http://slurm-q.example.com:6820", user_name="slurmrest",
        token_env="SLURM_JWT_Q", enabled=False,
    )  # fmt: skip


def _job(source, tenant, job_id, *, state="PENDING", partition="train", reason="Resources",
         submit=None, start=None, estimate=None, gpus=1, name=""):  # fmt: skip
    return SchedulerJob.objects.create(
        source=source, tenant=tenant, job_id=job_id, name=name or f"job-{job_id}",
        account=tenant.slug, partition=partition, state=state, state_reason=reason,
        gpus=gpus, submit_time=submit, start_time=start, estimated_start=estimate,
        synced_at=timezone.now(),
    )  # fmt: skip


def test_a_pending_jobs_start_time_is_kept_as_the_schedulers_estimate_not_its_start():
    """The shape of v0.0.38's answer as recorded from Slurm 22.05 (job 15: ``--begin`` in the
    future; job 14: waiting for resources, no estimate yet)."""
    deferred = v0_0_38.job({"job_id": 15, "job_state": "PENDING", "state_reason": "BeginTime",
                            "start_time": 1796188656, "submit_time": 1796159856,
                            "tres_per_job": "gres:gpu:2", "nodes": ""})  # fmt: skip
    waiting = v0_0_38.job({"job_id": 14, "job_state": "PENDING", "state_reason": "Resources",
                           "start_time": 0, "submit_time": 1796159856,
                           "tres_per_node": "gres:gpu:1", "nodes": ""})  # fmt: skip
    assert deferred.start_time is None
    assert deferred.estimated_start == datetime.fromtimestamp(1796188656, tz=UTC)
    assert deferred.gpus == 2
    assert waiting.estimated_start is None and waiting.start_time is None
    running = v0_0_38.job({"job_id": 3, "job_state": "RUNNING", "start_time": 1796160459,
                           "nodes": "gpu-001", "gres_detail": ["gpu:h100:2(IDX:0-1)"]})  # fmt: skip
    assert running.estimated_start is None and running.start_time is not None


@pytest.mark.django_db
def test_pending_jobs_group_by_partition_with_reasons_cards_and_estimates_first(users, tenants):
    source = _source()
    acme = tenants["acme"]
    later, sooner = NOW + timedelta(hours=5), NOW + timedelta(hours=1)
    _job(source, acme, 1, submit=NOW, reason="Resources", gpus=4)
    _job(source, acme, 2, submit=NOW, reason="BeginTime", estimate=later, gpus=2)
    _job(source, acme, 3, submit=NOW, reason="Priority", estimate=sooner, gpus=1)
    _job(source, acme, 4, partition="infer", submit=NOW, reason="Resources")
    _job(source, acme, 5, state="RUNNING", start=NOW)
    groups = pending_by_partition(users["operator"])
    assert [(g.partition, [j.job_id for j in g.jobs]) for g in groups] == [
        ("infer", [4]), ("train", [3, 2, 1]),
    ]  # fmt: skip
    train = groups[1]
    assert train.cards == 7
    assert train.reasons == {"BeginTime": 1, "Priority": 1, "Resources": 1}


@pytest.mark.django_db
def test_wait_percentiles_are_true_percentiles_per_tenant_and_hour_of_submission(users, tenants):
    source = _source()
    acme, panda = tenants["acme"], tenants["panda"]
    waits = [60, 120, 180, 240, 3600]  # minutes apart from a mean: P90 sits near the tail
    for i, minutes in enumerate(waits):
        submit = NOW - timedelta(days=1, hours=-i % 2)  # 12:00 and 11:00 UTC
        _job(source, acme, 10 + i, state="COMPLETED", submit=submit,
             start=submit + timedelta(seconds=minutes))  # fmt: skip
    _job(source, panda, 30, state="COMPLETED", submit=NOW - timedelta(hours=2),
         start=NOW - timedelta(hours=1))  # fmt: skip
    # Outside the window, and still waiting: neither counts.
    _job(source, acme, 40, state="COMPLETED", submit=NOW - timedelta(days=8),
         start=NOW - timedelta(days=7, hours=12))  # fmt: skip
    _job(source, acme, 41, submit=NOW - timedelta(hours=3))
    per_tenant, per_hour = wait_percentiles(users["operator"], now=NOW)
    acme_all = next(s for s in per_tenant if s.tenant == "acme")
    assert acme_all.count == 5
    assert acme_all.p50_seconds == pytest.approx(np.percentile(waits, 50)) == 180
    assert acme_all.p90_seconds == pytest.approx(np.percentile(waits, 90))
    assert acme_all.p90_seconds > float(np.mean(waits))
    hours = {(s.tenant, s.hour): (s.count, s.p50_seconds) for s in per_hour}
    assert hours[("acme", 12)] == (3, 180.0)  # 60, 180, 3600
    assert hours[("acme", 11)] == (2, 180.0)  # 120, 240
    assert hours[("panda", 10)] == (1, 3600.0)
    mine, mine_by_hour = wait_percentiles(users["customer"], now=NOW)
    assert {s.tenant for s in mine} | {s.tenant for s in mine_by_hour} == {"acme"}


@pytest.mark.django_db
def test_the_scheduler_page_shows_the_queues_and_a_customer_only_its_own(client_as, tenants):
    source = _source()
    _job(source, tenants["acme"], 1, submit=NOW, reason="Resources", name="acme-queued",
         estimate=NOW + timedelta(hours=2))  # fmt: skip
    _job(source, tenants["panda"], 2, submit=NOW, reason="Priority", name="panda-queued")
    page = client_as("customer").get("/scheduler/").content.decode()
    assert "acme-queued" in page and "panda-queued" not in page
    assert (NOW + timedelta(hours=2)).strftime("%Y-%m-%d %H:%M:%S") in page
    assert "/scheduler/showback/" in page
    operator = client_as("operator").get("/scheduler/").content.decode()
    assert "acme-queued" in operator and "panda-queued" in operator


class TestSchedulerQueuesAccess(ApiAccessCases):
    route = "api:scheduler-queues"
    url = "/api/v1/scheduler/queues/"

    def list_markers(self, users, tenants) -> list[str]:
        source = _source("slurm-q-api")
        _job(source, tenants["acme"], 1, submit=timezone.now(), name="acme-wait")
        _job(source, tenants["panda"], 2, submit=timezone.now(), name="panda-secret-wait",
             partition="panda-secret-partition")  # fmt: skip
        return ["panda-secret-wait", "panda-secret-partition"]


@pytest.mark.django_db
def test_the_queues_api_answers_pending_jobs_and_wait_percentiles(client_as, tenants):
    source = _source()
    now = timezone.now()
    _job(source, tenants["acme"], 1, submit=now, estimate=now + timedelta(hours=1), gpus=2)
    _job(source, tenants["acme"], 2, state="RUNNING", submit=now - timedelta(minutes=10),
         start=now - timedelta(minutes=5))  # fmt: skip
    body = client_as("customer").get("/api/v1/scheduler/queues/").json()
    (train,) = body["pending"]
    assert train["partition"] == "train" and train["cards"] == 2
    assert train["queue"][0]["estimated_start"] is not None
    (wait,) = body["waits_per_tenant"]
    assert wait["tenant"] == "acme" and wait["p50_seconds"] == pytest.approx(300.0)
    assert body["wait_window_days"] == 7


@pytest.mark.django_db
def test_an_unknown_queues_parameter_is_a_400_naming_it(client_as, users):
    answer = client_as("operator").get("/api/v1/scheduler/queues/?partition=x")
    assert answer.status_code == 400 and "partition" in answer.content.decode()


@pytest.mark.slow
@pytest.mark.django_db
def test_a_deferred_job_on_the_real_slurm_syncs_with_its_estimated_start(
    slurm, users, tenants, settings, monkeypatch
):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]  # the test's slurmrestd is local
    monkeypatch.setenv("PORTAL_TEST_SLURM_JWT", slurm.token)
    cluster = Cluster.objects.create(name="slurm-live-q", kind=Cluster.Kind.UNIFIED)
    scheduler_account_mapping_create(cluster=cluster, account="tenant-a", tenant=tenants["acme"])
    source = scheduler_source_create(
        cluster=cluster, base_url=slurm.url, user_name="slurmrest",
        token_env="PORTAL_TEST_SLURM_JWT", timeout_seconds=20,
    )  # fmt: skip
    job = slurm.sbatch("-A", "tenant-a", "--gres=gpu:1", "--begin=now+2hours",
                       "--wrap", "sleep 300")  # fmt: skip
    try:
        deadline, row = time.monotonic() + 90, None
        while time.monotonic() < deadline:
            scheduler_source_sync(source=source)
            row = SchedulerJob.objects.filter(source=source, job_id=job).first()
            if row is not None and row.estimated_start is not None:
                break
            time.sleep(1)
        assert row is not None and row.state == "PENDING" and row.start_time is None
        assert row.estimated_start > timezone.now() + timedelta(hours=1)
        groups = pending_by_partition(users["customer"])
        assert [j.job_id for g in groups for j in g.jobs] == [job]
        assert groups[0].reasons == {"BeginTime": 1}
    finally:
        slurm.scancel(job)
