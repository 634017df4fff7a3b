"""The scheduler sync against the run's real Slurm 22.05 (slurmrestd v0.0.38, never mocked):
real ``sbatch`` jobs of two accounts land under the right tenants with their cards and GPU
counts, a cancelled job ends, slurmrestd stopped mid-sync loses nothing, and what cannot be
read is refused naming it."""

from __future__ import annotations

import time

import pytest

from inventory.models import Cluster
from scheduling.errors import SchedulerSyncFailed
from scheduling.models import SchedulerJob, SchedulerSource
from scheduling.services.sources import scheduler_account_mapping_create, scheduler_source_create
from scheduling.services.sync import scheduler_source_sync
from scheduling.slurm import client as client_module

pytestmark = [pytest.mark.slow, pytest.mark.django_db]
TOKEN_ENV = "PORTAL_TEST_SLURM_JWT"


@pytest.fixture
def source(slurm, tenants, settings, monkeypatch):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]  # the test's slurmrestd is local
    monkeypatch.setenv(TOKEN_ENV, slurm.token)
    cluster = Cluster.objects.create(name="slurm-a", kind=Cluster.Kind.UNIFIED)
    scheduler_account_mapping_create(cluster=cluster, account="tenant-a", tenant=tenants["acme"])
    scheduler_account_mapping_create(cluster=cluster, account="tenant-b", tenant=tenants["panda"])
    return scheduler_source_create(
        cluster=cluster, base_url=slurm.url, user_name="slurmrest", token_env=TOKEN_ENV,
        timeout_seconds=20,
    )  # fmt: skip


def _sync_until(source, predicate, timeout: float = 90) -> None:
    """Sync until the stored jobs satisfy ``predicate`` (slurmrestd and the controller may lag
    a few seconds behind sbatch on a loaded machine)."""
    deadline = time.monotonic() + timeout
    while True:
        scheduler_source_sync(source=source)
        if predicate() or time.monotonic() > deadline:
            return
        time.sleep(1)


def _job(source, job_id) -> SchedulerJob | None:
    return SchedulerJob.objects.filter(source=source, job_id=job_id).first()


def test_jobs_of_two_accounts_land_with_their_tenants_cards_and_gpu_counts(slurm, source, tenants):
    single = slurm.sbatch("-A", "tenant-a", "--gres=gpu:2", "--wrap", "sleep 300")
    two_node = slurm.sbatch("-A", "tenant-b", "-N2", "--gres=gpu:h100:1", "--wrap", "sleep 300")
    per_job = slurm.sbatch("-A", "tenant-b", "--gpus=1", "--wrap", "sleep 300")
    ids = (single, two_node, per_job)
    try:
        for job in ids:
            slurm.wait_state(job, {"RUNNING"})
        _sync_until(
            source,
            lambda: all(
                (j := _job(source, i)) and j.state == "RUNNING" and j.allocation for i in ids
            ),
        )
        a, b, c = (_job(source, i) for i in ids)
        assert (a.tenant, b.tenant, c.tenant) == (
            tenants["acme"],
            tenants["panda"],
            tenants["panda"],
        )
        assert a.gpus == 2 and len(a.allocation[0]["cards"][0]["indices"]) == 2
        assert b.gpus == 2 and b.nodes == ["gpu-001", "gpu-002"]
        assert [n["node"] for n in b.allocation] == ["gpu-001", "gpu-002"]
        assert all(len(n["cards"][0]["indices"]) == 1 for n in b.allocation)
        assert c.gpus == 1  # --gpus lands in tres_per_job, still counted
        source.refresh_from_db()
        assert source.api_version == "v0.0.38" and source.last_error == ""
        assert source.nodes.count() == 2 and set(
            source.partitions.values_list("name", flat=True)
        ) == {"train", "infer"}
    finally:
        for job in ids:
            slurm.scancel(job)


def test_a_cancelled_job_ends(slurm, source):
    job = slurm.sbatch("-A", "tenant-a", "--gres=gpu:1", "--wrap", "sleep 300")
    slurm.wait_state(job, {"RUNNING"})
    _sync_until(source, lambda: (j := _job(source, job)) is not None and j.state == "RUNNING")
    slurm.scancel(job)
    _sync_until(source, lambda: _job(source, job).state == "CANCELLED")
    row = _job(source, job)
    assert row.state == "CANCELLED" and row.end_time is not None and row.end_time >= row.start_time


def test_an_unmapped_account_is_refused_and_counted(slurm, source):
    job = slurm.sbatch("-A", "tenant-z", "--wrap", "sleep 300")
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            result = scheduler_source_sync(source=source)
            if result.refused:
                break
            time.sleep(1)
        assert result.refused == {"account 'tenant-z' has no tenant mapping": 1}
        assert _job(source, job) is None
        source.refresh_from_db()
        assert source.last_refused == result.refused
    finally:
        slurm.scancel(job)


def test_slurmrestd_stopped_mid_sync_loses_nothing(slurm, source, monkeypatch):
    job = slurm.sbatch("-A", "tenant-a", "--gres=gpu:1", "--wrap", "sleep 300")
    try:
        slurm.wait_state(job, {"RUNNING"})
        _sync_until(source, lambda: (j := _job(source, job)) is not None and j.state == "RUNNING")
        slurm.scancel(job)
        slurm.wait_state(job, {"GONE", "CANCELLED", "COMPLETED"})
        real_get = client_module.SlurmClient.get

        def get_then_stop(self, path, params=None):
            answer = real_get(self, path, params)
            if path.endswith("/jobs"):
                slurm.stop_rest()  # gone after the jobs answer, before nodes and partitions
            return answer

        source.refresh_from_db()
        watermark = source.jobs_update_time
        monkeypatch.setattr(client_module.SlurmClient, "get", get_then_stop)
        with pytest.raises(SchedulerSyncFailed):
            scheduler_source_sync(source=source)
        monkeypatch.setattr(client_module.SlurmClient, "get", real_get)
        source.refresh_from_db()
        assert "unreachable" in source.last_error and source.last_error_at is not None
        assert _job(source, job).state == "RUNNING"  # nothing of the failed sync written
        assert source.jobs_update_time == watermark
    finally:
        if slurm.rest is None or slurm.rest.poll() is not None:
            slurm.start_rest()
    _sync_until(source, lambda: _job(source, job).state == "CANCELLED")
    source.refresh_from_db()
    assert _job(source, job).state == "CANCELLED" and source.last_error == ""


def test_an_unknown_api_version_only_server_is_refused_listing_the_known_ones(source, monkeypatch):
    def answer(self, path, params=None):
        return {"paths": {"/slurm/v0.0.41/jobs": {}, "/slurm/v0.0.42/jobs": {}}}

    monkeypatch.setattr(client_module.SlurmClient, "get", answer)
    with pytest.raises(SchedulerSyncFailed) as failure:
        scheduler_source_sync(source=source)
    assert "v0.0.41, v0.0.42" in str(failure.value.detail) and "v0.0.38" in str(
        failure.value.detail
    )
    assert SchedulerSource.objects.get(pk=source.pk).api_version == ""


def test_a_missing_token_variable_is_named(source, monkeypatch):
    monkeypatch.delenv(TOKEN_ENV)
    with pytest.raises(SchedulerSyncFailed, match=TOKEN_ENV):
        scheduler_source_sync(source=source)


def test_the_periodic_task_syncs_every_enabled_source_and_skips_one_it_cannot_read(
    slurm, source, tenants, monkeypatch
):
    from scheduling.tasks import scheduler_sources_sync

    down = scheduler_source_create(
        cluster=Cluster.objects.create(name="slurm-down", kind=Cluster.Kind.UNIFIED),
        base_url="http://127.0.0.1:9/", user_name="slurmrest", token_env=TOKEN_ENV,
        timeout_seconds=2,
    )  # fmt: skip
    disabled = scheduler_source_create(
        cluster=Cluster.objects.create(name="slurm-off", kind=Cluster.Kind.UNIFIED),
        base_url="http://127.0.0.1:9/", user_name="slurmrest", token_env=TOKEN_ENV,
    )  # fmt: skip
    SchedulerSource.objects.filter(pk=disabled.pk).update(enabled=False)
    assert scheduler_sources_sync.apply().get() == {"synced": 1, "unavailable": 1}
    source.refresh_from_db()
    down.refresh_from_db()
    disabled.refresh_from_db()
    assert source.api_version == "v0.0.38" and source.last_error == ""
    assert "unreachable" in down.last_error and down.last_error_at is not None
    assert disabled.last_error == "" and disabled.last_error_at is None  # never called
