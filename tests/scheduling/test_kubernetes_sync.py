"""Kubernetes as a scheduler source (issue 32 item 1), on recorded objects: no API server runs
here, so the official ``kubernetes`` client talks to a fake urllib3 transport that answers the
JSON fixtures under ``fixtures/k8s/`` (in the shape a real API server returns), and everything
from URL building to the client's own deserializer is the real code path. A recorded cluster
syncs to the right jobs, tenants and cards; an unmapped namespace is refused and counted; an
API error or a garbage answer is recorded and writes nothing; re-syncs change nothing."""

from __future__ import annotations

import json
import socket
from datetime import UTC, datetime
from pathlib import Path

import pytest
import urllib3

from inventory.models import Accelerator, Cluster, Node
from scheduling.errors import SchedulerSyncFailed
from scheduling.kubernetes.normalise import job_id_from_uid
from scheduling.models import SchedulerJob, SchedulerNode, SchedulerPartition, SchedulerSource
from scheduling.services.sources import scheduler_account_mapping_create, scheduler_source_create
from scheduling.services.sync import scheduler_source_sync
from telemetry.models import AttributionInterval, AttributionKind
from tests.factories import EntityFactory

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).parent / "fixtures" / "k8s"
NOW = datetime(2026, 12, 1, 8, 5, tzinfo=UTC)
ROUTES = {
    "/version/": "version.json",
    "/api/v1/pods": "pods.json",
    "/api/v1/nodes": "nodes.json",
    "/apis/kueue.x-k8s.io/v1beta1/workloads": "workloads.json",
    "/apis/kueue.x-k8s.io/v1beta1/localqueues": "localqueues.json",
    "/apis/kueue.x-k8s.io/v1beta1/clusterqueues": "clusterqueues.json",
    "/apis/scheduling.volcano.sh/v1beta1/queues": "volcano_queues.json",
    "/apis/scheduling.volcano.sh/v1beta1/podgroups": "podgroups.json",
}
GPU_POD = job_id_from_uid("3f2b8c1e-9a4d-4e57-b2a1-6c0d9e8f7a11")
NPU_POD = job_id_from_uid("7c1d2e3f-4a5b-4c6d-8e7f-901a2b3c4d5e")
KUEUE_POD = job_id_from_uid("a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d")
FINISHED_POD = job_id_from_uid("c0ffee00-1234-4abc-9def-0123456789ab")
PENDING_WORKLOAD = job_id_from_uid("f1e2d3c4-b5a6-4978-8a6b-5c4d3e2f1a0b")


class FakeApiServer:
    """Answers the official client's requests from the fixtures; ``overrides`` maps a path
    to (status, body bytes) or to an exception to raise, ``seen`` records what was asked."""

    def __init__(self) -> None:
        self.overrides: dict[str, object] = {}
        self.seen: list[tuple[str, dict]] = []

    def request(self, _pool, method, url, fields=None, headers=None, **_kwargs):
        path = urllib3.util.parse_url(url).path
        self.seen.append((path, dict(headers or {})))
        found = self.overrides.get(path)
        if isinstance(found, Exception):
            raise found
        if found is None:
            name = ROUTES.get(path)
            found = (200, (FIXTURES / name).read_bytes()) if name else (404, b'{"kind":"Status"}')
        status, body = found
        return urllib3.HTTPResponse(
            body=body, status=status, reason="OK" if status == 200 else "Error",
            headers={"Content-Type": "application/json"}, preload_content=True,
        )  # fmt: skip


@pytest.fixture
def api(monkeypatch) -> FakeApiServer:
    server = FakeApiServer()
    monkeypatch.setattr(
        urllib3.PoolManager, "request", lambda pool, *a, **k: server.request(pool, *a, **k)
    )
    real = socket.getaddrinfo

    def resolve(host, *args, **kwargs):  # the API server's name resolves to a public address
        if host == "k8s-api.example.com":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", 6443))]
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    monkeypatch.setenv("K8S_TOKEN_TEST", "sa-token-not-shown")
    return server


@pytest.fixture
def source(tenants) -> SchedulerSource:
    cluster = Cluster.objects.create(name="k8s-a")
    scheduler_account_mapping_create(cluster=cluster, account="team-a", tenant=tenants["acme"])
    scheduler_account_mapping_create(
        cluster=cluster, account="team-b/lq-train", tenant=tenants["panda"]
    )
    return scheduler_source_create(
        cluster=cluster, kind=SchedulerSource.Kind.KUBERNETES,
        base_url="https://k8s-api.example.com:6443", user_name="", token_env="K8S_TOKEN_TEST",
    )  # fmt: skip


def _jobs(source) -> dict[int, SchedulerJob]:
    return {j.job_id: j for j in SchedulerJob.objects.filter(source=source)}


def test_a_recorded_cluster_syncs_to_the_right_jobs_tenants_and_cards(api, source, tenants):
    result = scheduler_source_sync(source=source, now=NOW)
    jobs = _jobs(source)
    assert set(jobs) == {GPU_POD, NPU_POD, KUEUE_POD, FINISHED_POD, PENDING_WORKLOAD}
    gpu = jobs[GPU_POD]
    # Two GPUs in the trainer beat the init container's one; Volcano's PodGroup names the queue.
    assert (gpu.name, gpu.account, gpu.tenant, gpu.partition) == (
        "train-gpu-0",
        "team-a",
        tenants["acme"],
        "vc-train",
    )
    assert (gpu.state, gpu.nodes, gpu.gpus, gpu.npus) == ("RUNNING", ["gpu-node-1"], 2, 0)
    assert gpu.start_time == datetime(2026, 12, 1, 7, 58, 3, tzinfo=UTC) and gpu.end_time is None
    npu = jobs[NPU_POD]
    assert (npu.gpus, npu.npus, npu.partition, npu.nodes) == (0, 4, "default", ["npu-node-1"])
    # Huawei's device plugin names the cards on the pod: that is the allocation.
    assert npu.allocation == [
        {
            "node": "npu-node-1",
            "cards": [{"name": "npu", "type": "ascend", "indices": [0, 1, 2, 3]}],
        }
    ]
    kueue = jobs[KUEUE_POD]
    assert (kueue.account, kueue.tenant, kueue.partition, kueue.gpus) == (
        "team-b/lq-train",
        tenants["panda"],
        "cq-train",
        8,
    )
    pending = jobs[PENDING_WORKLOAD]  # a suspended Job: no pod yet, only its Workload
    assert (pending.name, pending.state, pending.partition, pending.gpus) == (
        "job-finetune-8e2f1",
        "PENDING",
        "cq-train",
        8,
    )
    assert "insufficient unused quota" in pending.state_reason and pending.start_time is None
    done = jobs[FINISHED_POD]
    assert done.state == "COMPLETED"
    assert done.end_time == datetime(2026, 12, 1, 5, 42, 17, tzinfo=UTC)
    # The intruder's pod is refused and counted, never attributed to anyone.
    assert result.refused == {"account 'intruder' has no tenant mapping": 1}
    source.refresh_from_db()
    assert source.api_version == "v1.31.4" and source.last_error == ""
    assert source.last_refused == result.refused
    # The bearer token went to the API server, never into the database.
    assert ("/api/v1/pods", {"authorization": "Bearer sa-token-not-shown"}) in [
        (p, {k.lower(): v for k, v in h.items() if k.lower() == "authorization"})
        for p, h in api.seen
    ]


def test_nodes_and_queues_become_scheduler_nodes_and_partitions(api, source):
    scheduler_source_sync(source=source, now=NOW)
    nodes = {n.name: n for n in SchedulerNode.objects.filter(source=source)}
    assert nodes["gpu-node-1"].gres == "nvidia.com/gpu=8"
    assert nodes["gpu-node-1"].gres_used == "gpu=2"  # the finished pod holds nothing
    assert nodes["npu-node-1"].gres == "huawei.com/Ascend910=8"
    assert nodes["gpu-node-2"].state == "Ready,SchedulingDisabled"
    assert (nodes["gpu-node-3"].state, nodes["gpu-node-3"].reason) == (
        "NotReady",
        "Kubelet stopped posting node status.",
    )
    partitions = {p.name: p.state for p in SchedulerPartition.objects.filter(source=source)}
    assert partitions == {"cq-train": "Active", "vc-train": "Open", "default": "Open"}


def test_a_re_sync_of_the_same_answer_changes_nothing(api, source):
    scheduler_source_sync(source=source, now=NOW)
    before = list(SchedulerJob.objects.filter(source=source).values().order_by("job_id"))
    scheduler_source_sync(source=source, now=NOW)
    after = list(SchedulerJob.objects.filter(source=source).values().order_by("job_id"))
    assert before == after and len(after) == 5
    assert SchedulerNode.objects.filter(source=source).count() == 4


def test_a_pod_gone_from_the_answer_is_ended_at_the_sync_that_noticed(api, source):
    scheduler_source_sync(source=source, now=NOW)
    pods = json.loads((FIXTURES / "pods.json").read_bytes())
    pods["items"] = [p for p in pods["items"] if p["metadata"]["name"] != "train-gpu-0"]
    api.overrides["/api/v1/pods"] = (200, json.dumps(pods).encode())
    later = datetime(2026, 12, 1, 8, 10, tzinfo=UTC)
    scheduler_source_sync(source=source, now=later)
    gone = SchedulerJob.objects.get(source=source, job_id=GPU_POD)
    assert (gone.state, gone.end_time) == ("DELETED", later)
    # A pod that had already finished keeps its own end.
    done = SchedulerJob.objects.get(source=source, job_id=FINISHED_POD)
    assert done.end_time == datetime(2026, 12, 1, 5, 42, 17, tzinfo=UTC)


def _nothing_written(source) -> bool:
    return not (
        SchedulerJob.objects.filter(source=source).exists()
        or SchedulerNode.objects.filter(source=source).exists()
        or SchedulerPartition.objects.filter(source=source).exists()
    )


@pytest.mark.parametrize(
    ("path", "answer", "said"),
    [
        ("/api/v1/nodes", (403, b'{"kind":"Status","code":403}'), "HTTP 403"),
        ("/api/v1/pods", (200, b"<html>login</html>"), "not a Kubernetes object list"),
        ("/apis/kueue.x-k8s.io/v1beta1/workloads", (200, b'{"items": 3}'), "workloads"),
        ("/api/v1/pods", urllib3.exceptions.NewConnectionError(None, "refused"), "unreachable"),
    ],
)
def test_an_api_error_or_garbage_is_recorded_and_writes_nothing(api, source, path, answer, said):
    api.overrides[path] = answer
    with pytest.raises(SchedulerSyncFailed):
        scheduler_source_sync(source=source, now=NOW)
    source.refresh_from_db()
    assert said in source.last_error and source.last_error_at == NOW
    assert "sa-token" not in source.last_error
    assert _nothing_written(source)


def test_a_failed_sync_keeps_what_the_last_good_one_wrote(api, source):
    scheduler_source_sync(source=source, now=NOW)
    api.overrides["/api/v1/pods"] = (500, b"{}")
    with pytest.raises(SchedulerSyncFailed):
        scheduler_source_sync(source=source, now=NOW)
    assert len(_jobs(source)) == 5
    source.refresh_from_db()
    assert source.last_success_at == NOW and "HTTP 500" in source.last_error


def test_a_cluster_without_kueue_or_volcano_puts_pods_in_default(api, source):
    for path in ROUTES:
        if path.startswith("/apis/"):
            api.overrides[path] = (404, b'{"kind":"Status","code":404}')
    scheduler_source_sync(source=source, now=NOW)
    jobs = _jobs(source)
    # Only the pod whose own annotation names a Volcano queue keeps it.
    assert {j.job_id for j in jobs.values() if j.partition != "default"} == {GPU_POD}
    assert jobs[GPU_POD].partition == "vc-train"
    # Without its Workload the Kueue pod's account is still its LocalQueue (its label says so).
    assert jobs[KUEUE_POD].account == "team-b/lq-train" and PENDING_WORKLOAD not in jobs


def test_a_missing_token_or_a_private_api_server_is_refused(api, source, monkeypatch):
    monkeypatch.delenv("K8S_TOKEN_TEST")
    with pytest.raises(SchedulerSyncFailed):
        scheduler_source_sync(source=source, now=NOW)
    source.refresh_from_db()
    assert "K8S_TOKEN_TEST" in source.last_error
    monkeypatch.setenv("K8S_TOKEN_TEST", "t")
    SchedulerSource.objects.filter(pk=source.pk).update(base_url="https://kube.internal:6443")
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: [(2, 1, 6, "", ("10.0.0.5", 6443))])
    source.refresh_from_db()
    with pytest.raises(SchedulerSyncFailed):
        scheduler_source_sync(source=source, now=NOW)
    source.refresh_from_db()
    assert "outbound policy" in source.last_error and api.seen == []


def test_the_ascend_plugins_annotation_attributes_the_npu_pods_cards_to_its_tenant(
    api, source, tenants
):
    node = Node.objects.create(cluster=source.cluster, hostname="npu-node-1")
    for index in range(8):
        card = Accelerator.objects.create(
            node=node, index=index, vendor_id=f"npu-{index}", model_name="Ascend 910B"
        )
        EntityFactory(cluster=source.cluster, key=f"npu-node-1/npu{index}", accelerator=card)
    result = scheduler_source_sync(source=source, now=NOW)
    rows = AttributionInterval.objects.filter(
        cluster=source.cluster, kind=AttributionKind.SCHEDULER
    )
    assert result.intervals_started == 4
    assert {(r.entity.accelerator.index, r.hpc_job, r.tenant_id) for r in rows} == {
        (i, str(NPU_POD), tenants["acme"].pk) for i in range(4)
    }
