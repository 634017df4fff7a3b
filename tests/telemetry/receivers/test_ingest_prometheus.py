"""POST /api/v1/telemetry/prometheus/: exporter text registers devices and lands in the store."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from accounts.services.tokens import token_create
from inventory.models import Accelerator, Node
from telemetry.models import Entity, MetricDefinition, Sample

DCGM = """# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-aaa",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-01"} 87
DCGM_FI_DEV_GPU_UTIL{gpu="1", UUID="GPU-bbb", device="nvidia1", modelName="NVIDIA H100 80GB HBM3", Hostname="dgx-01"} 12
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-aaa",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-01"} 40960
# TYPE DCGM_FI_DEV_FB_FREE gauge
DCGM_FI_DEV_FB_FREE{gpu="0",UUID="GPU-aaa",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-01"} 40960
# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{gpu="1",UUID="GPU-bbb",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-01"} 9223372036854775794
# TYPE DCGM_FI_PROF_PIPE_TENSOR_ACTIVE gauge
DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{gpu="0",UUID="GPU-aaa",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-01"} 0.41"""

NPU = """# HELP npu_chip_info_health_status whether the npu chip is healthy
# TYPE npu_chip_info_health_status gauge
npu_chip_info_health_status{id="0",model_name="Ascend910B",vdie_id="VD-0"} 1 1764400000000
npu_chip_info_health_status{id="1",model_name="Ascend910B",vdie_id="VD-1"} 0 1764400000000
# TYPE npu_chip_info_utilization gauge
npu_chip_info_utilization{id="0",model_name="Ascend910B",vdie_id="VD-0"} 55 1764400000000
npu_chip_info_utilization{id="1",model_name="Ascend910B",vdie_id="VD-1"} -1 1764400000000
# TYPE machine_npu_nums gauge
machine_npu_nums 8 1764400000000
"""


@pytest.fixture
def exporter_client(db) -> APIClient:
    client = APIClient()
    client.credentials(
        HTTP_AUTHORIZATION=f"Bearer {token_create(name='x', scopes=['ingest']).plaintext}"
    )
    return client


def post(client, text: str, query: str, **headers):
    return client.post(
        f"/api/v1/telemetry/prometheus/?{query}",
        data=text.encode(),
        content_type="text/plain; version=0.0.4",
        headers=headers,
    )


@pytest.mark.django_db
def test_dcgm_text_registers_the_host_and_gpus_and_reports_counts(exporter_client, cluster):
    response = post(exporter_client, DCGM, "cluster=unified-a&source=dcgm")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["dropped"] == {"dcgm_blank_sentinel": 1}
    assert body["accepted"] == body["mapped"] + body["unmapped_kept"]
    assert body["unmapped_kept"] == 1  # DCGM_FI_PROF_* kept under its own name
    assert body["accelerators"] == 2 and body["nodes"] == 1
    node = Node.objects.get(cluster=cluster, hostname="dgx-01")
    assert node.registered_by_exporter
    assert set(Accelerator.objects.filter(node=node).values_list("vendor_id", "index")) == {
        ("GPU-aaa", 0),
        ("GPU-bbb", 1),
    }
    util = Sample.objects.get(metric__name="accelerator_utilization_ratio", entity__key="GPU-aaa")
    assert util.value == pytest.approx(0.87)
    total = Sample.objects.get(metric__name="accelerator_hbm_total_bytes")
    assert total.value == 81920 * 2**20
    assert MetricDefinition.objects.filter(mapped=False).count() == 1


@pytest.mark.django_db
def test_npu_text_uses_the_node_parameter_and_millisecond_timestamps(exporter_client, cluster):
    response = post(exporter_client, NPU, "cluster=unified-a&node=atlas-07")
    assert response.status_code == 201, response.json()
    assert response.json()["dropped"] == {"npu_collection_failed": 1}
    health = dict(
        Accelerator.objects.filter(node__hostname="atlas-07").values_list("vendor_id", "health")
    )
    assert health == {"VD-0": 1, "VD-1": 0}
    sample = Sample.objects.filter(metric__name="accelerator_utilization_ratio").get()
    assert sample.ts.timestamp() == 1764400000.0
    assert Entity.objects.filter(kind="node", key="atlas-07").exists()


@pytest.mark.django_db
def test_npu_text_without_a_node_is_rejected_naming_the_line(exporter_client, cluster):
    response = post(exporter_client, NPU, "cluster=unified-a")
    assert response.status_code == 400
    body = response.json()
    assert body["field"] == "body" and body["row"] == 3
    assert "node=" in body["detail"]
    assert not Sample.objects.exists() and not Node.objects.exists()


@pytest.mark.django_db
def test_a_malformed_line_rejects_the_whole_exposition(exporter_client, cluster):
    response = post(
        exporter_client, DCGM + '\nDCGM_FI_DEV_GPU_UTIL{gpu="0" 5\n', "cluster=unified-a"
    )
    assert response.status_code == 400
    assert response.json()["row"] == 13
    assert not Sample.objects.exists() and not Accelerator.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("query", "field"),
    [("cluster=nowhere", "cluster"), ("cluster=unified-a&source=snmp", "source")],
)
def test_bad_parameters_are_named(exporter_client, cluster, query, field):
    response = post(exporter_client, DCGM, query)
    assert response.status_code == 400
    assert response.json()["field"] == field


@pytest.mark.django_db
def test_a_replayed_scrape_with_its_key_writes_nothing(exporter_client, cluster):
    first = post(exporter_client, NPU, "cluster=unified-a&node=a", **{"Idempotency-Key": "s1"})
    again = post(exporter_client, NPU, "cluster=unified-a&node=a", **{"Idempotency-Key": "s1"})
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json() == first.json()
    assert Sample.objects.count() == first.json()["inserted"]


@pytest.mark.django_db
def test_a_tenant_token_cannot_push_infrastructure_metrics(cluster, tenants):
    client = APIClient()
    issued = token_create(name="t", scopes=["ingest"], tenant=tenants["acme"])
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")
    assert post(client, DCGM, "cluster=unified-a").status_code == 403
    assert not Sample.objects.exists()
