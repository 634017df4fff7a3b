"""Chip identity (issue 22 parts 1 and 4): a chip is its own id, never its host and index;
MIG slices are entities under their GPU; a moved chip is recorded, not duplicated; samples that
cannot be attributed are refused and counted per reason, never merged."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest
from rest_framework.test import APIClient

from accounts.services.tokens import token_create
from inventory.models import Accelerator, AcceleratorMove, Node
from telemetry.models import Entity, Sample
from telemetry.read.promql.translate import selector
from tests.telemetry.exporter_captures import A100, MIG_SLICES, dcgm_mig_text
from tests.telemetry.remote_write_helpers import write_request


@pytest.fixture
def ingest(db) -> APIClient:
    client = APIClient()
    token = token_create(name="prometheus", scopes=["ingest"]).plaintext
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def remote_write(client, series, query: str = "cluster=unified-a"):
    return client.generic(
        "POST",
        f"/api/v1/telemetry/remote-write/?{query}",
        data=write_request(series),
        content_type="application/x-protobuf",
        HTTP_CONTENT_ENCODING="snappy",
    )


def push_text(client, text: str, query: str = "cluster=unified-a"):
    return client.post(
        f"/api/v1/telemetry/prometheus/?{query}",
        data=text.encode(),
        content_type="text/plain; version=0.0.4",
    )


def npu_series(now_ms: int, *, ports=(9101, 9102, 9103), vdie: bool = True, extra=None):
    """Three npu-exporters of 8 chips on one address, as Prometheus forwards them."""
    series = []
    for n, port in enumerate(ports):
        for chip in range(8):
            labels = {
                "__name__": "npu_chip_info_utilization",
                "id": str(chip),
                "model_name": "Ascend910B",
                "instance": f"10.0.0.5:{port}",
                "job": "npu",
                **(extra or {}),
            }
            if vdie:
                labels["vdie_id"] = f"VD-{n}-{chip}"
            series.append((labels, [(now_ms, 10 * n + chip)]))
    return series


@pytest.mark.django_db
def test_three_npu_exporters_behind_one_address_are_24_cards_not_8(ingest, cluster):
    response = remote_write(ingest, npu_series(int(time.time() * 1000)))

    body = response.json()
    assert response.status_code == 200, body
    assert body["accelerators"] == 24 and body["inserted"] == 24
    assert body["refused"] == {} and body["collapsed_same_point"] == 0
    cards = Accelerator.objects.filter(node__cluster=cluster)
    assert cards.count() == 24
    assert set(cards.values_list("node__hostname", flat=True)) == {"10.0.0.5"}
    assert Entity.objects.filter(cluster=cluster, kind="accelerator").count() == 24
    values = Sample.objects.filter(entity__key="VD-2-7").values_list("value", flat=True)
    assert list(values) == [pytest.approx(0.27)]  # one chip, one series: nothing interleaved


@pytest.mark.django_db
def test_chips_without_vdie_behind_one_address_are_refused_as_ambiguous_not_merged(ingest, cluster):
    response = remote_write(ingest, npu_series(int(time.time() * 1000), vdie=False))

    body = response.json()
    assert response.status_code == 200, body
    assert body["refused"] == {"ambiguous_chip": 24}
    assert body["dropped"] == {"ambiguous_chip": 24}
    assert body["inserted"] == 0
    assert not Accelerator.objects.filter(node__cluster=cluster).exists()


@pytest.mark.django_db
def test_the_kubernetes_node_label_names_the_host_before_instance(ingest, cluster):
    series = npu_series(int(time.time() * 1000), ports=(9101,), extra={"node": "atlas-07"})
    assert remote_write(ingest, series).status_code == 200

    assert list(Node.objects.filter(cluster=cluster).values_list("hostname", flat=True)) == [
        "atlas-07"
    ]


@pytest.mark.django_db
def test_a_cluster_can_name_its_own_host_labels(ingest, cluster):
    cluster.host_labels = "kubernetes_node, instance"
    cluster.full_clean()
    cluster.save()
    series = npu_series(
        int(time.time() * 1000), ports=(9101,), extra={"kubernetes_node": "k8s-worker-3"}
    )
    assert remote_write(ingest, series).status_code == 200

    assert set(Node.objects.filter(cluster=cluster).values_list("hostname", flat=True)) == {
        "k8s-worker-3"
    }


@pytest.mark.django_db
def test_a_series_with_no_host_is_refused_and_counted(ingest, cluster):
    labels = {"__name__": "npu_chip_info_utilization", "id": "0", "vdie_id": "VD-x"}
    response = remote_write(ingest, [(labels, [(int(time.time() * 1000), 5)])])

    assert response.json()["refused"] == {"no_host": 1}
    assert not Accelerator.objects.exists()


@pytest.mark.django_db
def test_a_moved_chip_is_recorded_not_duplicated(ingest, cluster):
    line = 'DCGM_FI_DEV_GPU_TEMP{{gpu="{i}",UUID="GPU-aaa",Hostname="{host}"}} 50 {ms}\n'
    first_ms = int(time.time() * 1000) - 60_000
    assert push_text(ingest, line.format(i=0, host="dgx-01", ms=first_ms)).status_code == 201
    entity = Entity.objects.get(cluster=cluster, key="GPU-aaa")

    later_ms = first_ms + 30_000
    assert push_text(ingest, line.format(i=3, host="dgx-02", ms=later_ms)).status_code == 201

    card = Accelerator.objects.get(node__cluster=cluster)
    assert card.node.hostname == "dgx-02" and card.vendor_id == "GPU-aaa"
    entity.refresh_from_db()
    assert entity.node_id == card.node_id and entity.accelerator_id == card.id
    assert Entity.objects.filter(cluster=cluster, kind="accelerator").count() == 1
    assert Sample.objects.filter(entity=entity).count() == 2  # one history, both hosts
    (move,) = AcceleratorMove.objects.all()
    assert (move.accelerator_id, move.from_hostname, move.to_hostname) == (
        card.id,
        "dgx-01",
        "dgx-02",
    )
    assert move.seen_at == datetime.fromtimestamp(later_ms / 1000, tz=UTC)


@pytest.mark.django_db
def test_last_seen_is_the_newest_sample_of_the_batch_and_never_goes_back(ingest, cluster):
    line = 'DCGM_FI_DEV_GPU_TEMP{{gpu="0",UUID="GPU-aaa",Hostname="dgx-01"}} 50 {ms}\n'
    newest = int(time.time() * 1000) - 10_000
    text = line.format(ms=newest - 5000) + line.format(ms=newest)
    assert push_text(ingest, text).status_code == 201
    assert push_text(ingest, line.format(ms=newest - 20_000)).status_code == 201  # late data

    card = Accelerator.objects.get(vendor_id="GPU-aaa")
    assert card.last_seen == datetime.fromtimestamp(newest / 1000, tz=UTC)


@pytest.mark.django_db
def test_two_mig_slices_of_one_gpu_used_by_two_tenants_stay_two_entities(ingest, cluster):
    response = push_text(ingest, dcgm_mig_text())

    body = response.json()
    assert response.status_code == 201, body
    assert body["collapsed_same_point"] == 0 and body["refused"] == {}
    gpu = Accelerator.objects.get(vendor_id=A100)
    slices = {s.vendor_id: s for s in gpu.slices.all()}
    assert set(slices) == {f"{A100}/gi1", f"{A100}/gi2"}
    assert {(s.mig_profile, s.gpu_instance_id) for s in slices.values()} == {
        ("3g.40gb", 1),
        ("4g.40gb", 2),
    }
    assert all(s.node_id == gpu.node_id for s in slices.values())
    used = dict(
        Sample.objects.filter(metric__name="accelerator_hbm_used_bytes").values_list(
            "entity__key", "value"
        )
    )
    assert used == {f"{A100}/gi1": 39000 * 2**20, f"{A100}/gi2": 1200 * 2**20}
    util = dict(
        Sample.objects.filter(metric__name="accelerator_utilization_ratio").values_list(
            "entity__key", "value"
        )
    )
    assert util == {
        f"{A100}/gi{gi}": pytest.approx(active) for _, gi, _, _, _, active in MIG_SLICES
    }


@pytest.mark.parametrize(("xid", "health"), [(0, 1), (13, 1), (79, 0), (48, 0)])
@pytest.mark.django_db
def test_nvidia_health_comes_from_xid_errors(ingest, cluster, xid, health):
    assert push_text(ingest, dcgm_mig_text(xid=xid)).status_code == 201

    slices = Accelerator.objects.filter(parent__isnull=False)
    assert set(slices.values_list("health", flat=True)) == {health}
    assert Accelerator.objects.get(vendor_id=A100).health == health  # the GPU: worst slice
    stored = Sample.objects.filter(metric__name="accelerator_health_status")
    assert set(stored.values_list("value", flat=True)) == {health}


@pytest.mark.django_db
def test_a_dcgm_failure_field_makes_the_card_unhealthy(ingest, cluster):
    text = (
        'DCGM_FI_DEV_XID_ERRORS{gpu="0",UUID="GPU-aaa",Hostname="dgx-01"} 0\n'
        'DCGM_FI_DEV_ROW_REMAP_FAILURE{gpu="0",UUID="GPU-aaa",Hostname="dgx-01"} 1\n'
        'DCGM_FI_DEV_XID_ERRORS{gpu="1",UUID="GPU-bbb",Hostname="dgx-01"} 0\n'
        'DCGM_FI_DEV_ROW_REMAP_FAILURE{gpu="1",UUID="GPU-bbb",Hostname="dgx-01"} 0\n'
    )
    assert push_text(ingest, text).status_code == 201

    health = dict(Accelerator.objects.values_list("vendor_id", "health"))
    assert health == {"GPU-aaa": 0, "GPU-bbb": 1}


def test_a_mig_slice_is_asked_of_a_promql_server_by_its_uuid_and_gpu_instance():
    assert selector("DCGM_FI_DEV_FB_USED", label_map={}, vendor_id=f"{A100}/gi2") == (
        f'{{__name__=~"DCGM_FI_DEV_FB_USED",UUID="{A100}",GPU_I_ID="2"}}'
    )
    assert selector("DCGM_FI_DEV_FB_USED", label_map={}, vendor_id=A100) == (
        f'{{__name__=~"DCGM_FI_DEV_FB_USED",UUID="{A100}"}}'
    )
