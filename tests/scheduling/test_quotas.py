"""Quota beside use (issue 32 item 5): each card quota a scheduler states — a Kueue
ClusterQueue's nominal quota, a Volcano queue's capability (recorded objects through the
official client), a Slurm account's GrpTRES (slurmdb's associations as recorded from a real
Slurm 22.05 with accounting: the suite's live Slurm runs without slurmdbd, which costs
12-15 s a start) — beside the cards the jobs synced in it hold and ask for; customers see
their own accounts, and queues with their own use only."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.utils import timezone

from inventory.models import Cluster
from scheduling.errors import SchedulerSyncFailed
from scheduling.models import SchedulerJob, SchedulerQuota, SchedulerSource
from scheduling.selectors.quotas import quotas_beside_use
from scheduling.services.sources import scheduler_account_mapping_create, scheduler_source_create
from scheduling.services.sync import scheduler_source_sync
from scheduling.slurm import v0_0_38
from tests.access import ApiAccessCases
from tests.scheduling import test_kubernetes_sync as recorded_k8s
from tests.servers import RecordedHTTPServer

# The recorded Kubernetes API server and its source, shared with the Kubernetes sync tests.
api, source, NOW = recorded_k8s.api, recorded_k8s.source, recorded_k8s.NOW

SLURM = Path(__file__).parent / "fixtures" / "slurm"
ASSOCIATIONS = json.loads((SLURM / "associations-v0.0.38.json").read_text())


def _quotas(source) -> dict[str, SchedulerQuota]:
    return {q.name: q for q in SchedulerQuota.objects.filter(source=source)}


@pytest.mark.django_db
def test_kueue_and_volcano_queues_quotas_sync_beside_the_cards_their_jobs_hold(
    api, source, tenants, users
):
    result = scheduler_source_sync(source=source, now=NOW)
    assert result.quotas == 2
    quotas = _quotas(source)
    kueue, volcano = quotas["cq-train"], quotas["vc-train"]
    # ClusterQueue cq-train: nominalQuota 12 GPUs on one flavour, no borrowingLimit (none is
    # stated: in a cohort it could borrow all that is lent), Kueue counts 8 in use.
    assert (kueue.scope, kueue.origin, kueue.gpus, kueue.npus) == ("queue", "kueue", 12, None)
    assert (kueue.gpus_borrowing_limit, kueue.reported_gpus) == (None, 8)
    # Volcano queue vc-train: capability 16 GPUs; this release reports no allocation.
    assert (volcano.origin, volcano.gpus, volcano.reported_gpus) == ("volcano", 16, None)
    rows = {row.quota.name: row for row in quotas_beside_use(users["operator"])}
    # The Kueue pod holds 8 GPUs, the suspended Workload asks for 8 more; Volcano's trainer 2.
    cq = rows["cq-train"]
    assert (cq.gpus_used, cq.gpus_pending, round(cq.gpu_percent)) == (8, 8, 67)
    assert cq.tenants == [tenants["panda"].name] and cq.reported_gpus == 8
    vc = rows["vc-train"]
    assert (vc.gpus_used, vc.gpus_pending, vc.gpu_percent) == (2, 0, 12.5)
    assert vc.tenants == [tenants["acme"].name]
    # A re-sync of the same answer rewrites nothing; a quota gone from the answer goes.
    before = list(SchedulerQuota.objects.values_list("pk", flat=True).order_by("pk"))
    scheduler_source_sync(source=source, now=NOW)
    assert list(SchedulerQuota.objects.values_list("pk", flat=True).order_by("pk")) == before
    body = json.loads(
        (Path(__file__).parent / "fixtures" / "k8s" / "clusterqueues.json").read_text()
    )
    body["items"][0]["spec"]["resourceGroups"][0]["flavors"][0]["resources"] = []
    api.overrides["/apis/kueue.x-k8s.io/v1beta1/clusterqueues"] = (200, json.dumps(body).encode())
    scheduler_source_sync(source=source, now=NOW)
    assert set(_quotas(source)) == {"vc-train"}


@pytest.mark.django_db
def test_a_quota_that_is_not_a_whole_number_of_cards_is_refused_naming_it_and_writes_nothing(
    api, source
):
    body = json.loads(
        (Path(__file__).parent / "fixtures" / "k8s" / "clusterqueues.json").read_text()
    )
    body["items"][0]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = (
        "1.5"
    )
    api.overrides["/apis/kueue.x-k8s.io/v1beta1/clusterqueues"] = (200, json.dumps(body).encode())
    with pytest.raises(SchedulerSyncFailed, match="cq-train.*'1.5' is not a whole number"):
        scheduler_source_sync(source=source, now=NOW)
    assert not SchedulerQuota.objects.exists() and not SchedulerJob.objects.exists()


def test_slurm_account_associations_grptres_become_account_quotas():
    records = {r.name: r for r in v0_0_38.quotas(ASSOCIATIONS)}
    # root and the accounts without a GrpTRES limit nothing; bob's own (user) association
    # limits one person inside tenant-b, not the tenant: skipped.
    assert set(records) == {"tenant-a", "tenant-b"}
    a, b = records["tenant-a"], records["tenant-b"]
    assert (a.scope, a.origin, a.partition, a.gpus, a.npus) == ("account", "slurm", "", 4, None)
    assert (b.gpus, b.npus, b.reported_gpus) == (2, 4, None)


@pytest.mark.parametrize("count", [-1, "4", None, 2.5])
def test_a_grptres_count_that_is_not_a_count_is_an_error_naming_the_account(count):
    answer = json.loads(json.dumps(ASSOCIATIONS))
    tenant_a = next(
        a for a in answer["associations"] if a["account"] == "tenant-a" and not a["user"]
    )
    tenant_a["max"]["tres"]["total"][0]["count"] = count
    with pytest.raises(v0_0_38.AnswerError, match="'tenant-a': GrpTRES gres/gpu"):
        v0_0_38.quotas(answer)


def recorded_slurmrestd(*, with_accounting: bool) -> RecordedHTTPServer:
    """slurmrestd's recorded v0.0.38 answers of a real Slurm, with slurmdb's associations
    when ``with_accounting`` (the one thing the suite's live Slurm cannot serve); its
    ``/openapi/v3`` lists the paths served, as the real one does."""
    answers = {
        "/slurm/v0.0.38/jobs": SLURM / "jobs-v0.0.38.json",
        "/slurm/v0.0.38/nodes": SLURM / "nodes-v0.0.38.json",
        "/slurm/v0.0.38/partitions": SLURM / "partitions-v0.0.38.json",
    }
    if with_accounting:
        answers["/slurmdb/v0.0.38/associations"] = SLURM / "associations-v0.0.38.json"
    routes = {path: file.read_bytes() for path, file in answers.items()}
    routes["/openapi/v3"] = json.dumps(
        {"openapi": "3.0.2", "paths": dict.fromkeys(answers, {})}
    ).encode()
    return RecordedHTTPServer(routes, missing=b"Unable find requested URL.")


def _slurm_source(url, tenants, settings, monkeypatch, name="slurm-quota") -> SchedulerSource:
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    monkeypatch.setenv("SLURM_JWT_QUOTA", "recorded")
    cluster = Cluster.objects.create(name=name, kind=Cluster.Kind.UNIFIED)
    scheduler_account_mapping_create(cluster=cluster, account="tenant-a", tenant=tenants["acme"])
    scheduler_account_mapping_create(cluster=cluster, account="tenant-b", tenant=tenants["panda"])
    return scheduler_source_create(
        cluster=cluster, base_url=url, user_name="slurmrest", token_env="SLURM_JWT_QUOTA",
    )  # fmt: skip


@pytest.mark.django_db
def test_a_slurm_with_accounting_shows_each_accounts_grptres_beside_its_jobs(
    tenants, users, settings, monkeypatch
):
    server = recorded_slurmrestd(with_accounting=True)
    try:
        source = _slurm_source(server.url, tenants, settings, monkeypatch)
        result = scheduler_source_sync(source=source, now=datetime(2026, 12, 1, tzinfo=UTC))
    finally:
        server.stop()
    assert result.quotas == 2 and "/slurmdb/v0.0.38/associations" in server.seen
    rows = {row.quota.name: row for row in quotas_beside_use(users["operator"])}
    # tenant-a: job 10 runs on 3 GPUs, job 11 waits for 1, against GrpTRES gres/gpu=4.
    a = rows["tenant-a"]
    assert (a.quota.gpus, a.gpus_used, a.gpus_pending, a.tenants) == (
        4,
        3,
        1,
        [tenants["acme"].name],
    )
    # tenant-b: job 6 holds 2 NPUs of 4; job 12 asks for 2 GPUs of 2.
    b = rows["tenant-b"]
    assert (b.quota.npus, b.npus_used, b.quota.gpus, b.gpus_used, b.gpus_pending) == (4, 2, 2, 0, 2)
    # Each customer sees its own account's quota, not the other's.
    assert [r.quota.name for r in quotas_beside_use(users["customer"])] == ["tenant-a"]
    assert [r.quota.name for r in quotas_beside_use(users["other_customer"])] == ["tenant-b"]


@pytest.mark.django_db
def test_a_slurm_without_accounting_syncs_without_account_quotas_and_without_an_error(
    tenants, settings, monkeypatch
):
    server = recorded_slurmrestd(with_accounting=False)
    try:
        source = _slurm_source(server.url, tenants, settings, monkeypatch)
        result = scheduler_source_sync(source=source, now=datetime(2026, 12, 1, tzinfo=UTC))
    finally:
        server.stop()
    source.refresh_from_db()
    assert result.quotas == 0 and source.last_error == ""
    assert "/slurmdb/v0.0.38/associations" not in server.seen  # not offered: not asked


@pytest.mark.django_db
def test_a_customer_sees_a_shared_queues_quota_with_its_own_use_only(api, source, tenants, users):
    scheduler_source_sync(source=source, now=NOW)
    acme = {row.quota.name: row for row in quotas_beside_use(users["customer"], now=NOW)}
    assert set(acme) == {"vc-train"}  # acme's trainer runs there; cq-train is panda's
    row = acme["vc-train"]
    assert row.own_use_only and row.tenants == [] and row.gpus_used == 2
    panda = {row.quota.name: row for row in quotas_beside_use(users["other_customer"], now=NOW)}
    assert set(panda) == {"cq-train"}
    # The scheduler's own count is the whole queue's: hidden from a tenant's view.
    assert panda["cq-train"].reported_gpus is None and panda["cq-train"].gpus_used == 8


@pytest.mark.django_db
def test_the_scheduler_page_shows_quotas_beside_use(api, source, client_as):
    scheduler_source_sync(source=source, now=NOW)
    page = client_as("operator").get("/scheduler/").content.decode()
    assert "Quotas beside use" in page and "cq-train" in page
    assert "Kueue ClusterQueue nominal quota" in page and "Volcano queue capability" in page


class TestSchedulerQuotasAccess(ApiAccessCases):
    route = "api:scheduler-queues"
    url = "/api/v1/scheduler/queues/"

    def list_markers(self, users, tenants) -> list[str]:
        cluster = Cluster.objects.create(name="quota-cluster", kind=Cluster.Kind.UNIFIED)
        scheduler_account_mapping_create(
            cluster=cluster, account="panda-secret-account", tenant=tenants["panda"]
        )
        slurm = scheduler_source_create(
            cluster=cluster, base_url="http://slurm-quota.example.com:6820",
            user_name="slurmrest", token_env="SLURM_JWT_Q", enabled=False,
        )  # fmt: skip
        SchedulerQuota.objects.create(source=slurm, scope="account", origin="slurm",
                                      name="panda-secret-account", gpus=64)  # fmt: skip
        SchedulerQuota.objects.create(source=slurm, scope="queue", origin="kueue",
                                      name="panda-secret-queue", gpus=32)  # fmt: skip
        SchedulerJob.objects.create(
            source=slurm, tenant=tenants["panda"], job_id=1, account="panda-secret-account",
            partition="panda-secret-queue", state="RUNNING", gpus=8, synced_at=timezone.now(),
        )  # fmt: skip
        return ["panda-secret-account", "panda-secret-queue"]
