"""POST /api/v1/telemetry/remote-write/: Prometheus remote-write 1.0 through the text path's
mapping and store; idempotent under resends; 4xx (never retried) for bad input."""

from __future__ import annotations

import time

import cramjam
import pytest
from rest_framework.test import APIClient

from accounts.services.tokens import token_create
from inventory.models import Accelerator, Node
from telemetry.models import RemoteWriteStatus, Sample
from tests.telemetry.remote_write_helpers import write_request

URL = "/api/v1/telemetry/remote-write/"


@pytest.fixture
def rw_client(db) -> APIClient:
    client = APIClient()
    token = token_create(name="prometheus", scopes=["ingest"]).plaintext
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def send(client, body: bytes, query: str = "cluster=unified-a", **headers):
    headers.setdefault("Content-Encoding", "snappy")
    return client.generic(
        "POST",
        f"{URL}?{query}",
        data=body,
        content_type="application/x-protobuf",
        **{f"HTTP_{k.upper().replace('-', '_')}": v for k, v in headers.items()},
    )


def _series(now_ms: int) -> list:
    gpu = {"gpu": "0", "UUID": "GPU-aaa", "modelName": "NVIDIA H100", "Hostname": "dgx-01"}
    gpu = {**gpu, "instance": "10.0.0.5:9400", "job": "dcgm"}
    npu = {"id": "3", "vdie_id": "VD-3", "model_name": "Ascend910B", "instance": "atlas-07:8082"}
    return [
        ({"__name__": "DCGM_FI_DEV_GPU_UTIL", **gpu}, [(now_ms - 15000, 80), (now_ms, 90)]),
        ({"__name__": "DCGM_FI_DEV_FB_USED", **gpu}, [(now_ms, 1024)]),
        ({"__name__": "DCGM_FI_DEV_FB_FREE", **gpu}, [(now_ms, 3072)]),
        ({"__name__": "DCGM_FI_DEV_POWER_USAGE", **gpu}, [(now_ms, 9223372036854775794)]),
        ({"__name__": "npu_chip_info_utilization", **npu}, [(now_ms, 55), (now_ms + 1, -1)]),
        ({"__name__": "npu_chip_info_health_status", **npu}, [(now_ms, 0)]),
        ({"__name__": "up", "instance": "atlas-07:8082", "job": "npu"}, [(now_ms, 1)]),
        ({"__name__": "DCGM_FI_DEV_GPU_TEMP", **gpu}, [(1000, 40)]),  # 1970: out of window
    ]


@pytest.mark.django_db
def test_remote_write_maps_like_the_text_path_and_counts(rw_client, cluster):
    now_ms = int(time.time() * 1000)
    response = send(rw_client, write_request(_series(now_ms)))
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["dropped"] == {
        "dcgm_blank_sentinel": 1,
        "npu_collection_failed": 1,
        "not_exporter_metric": 1,
        "timestamp_out_of_range": 1,
    }
    assert body["accepted"] == body["mapped"] == 6  # 2 util, used, total, npu util, health
    assert body["received"] == 10 and body["series"] == 7
    assert body["inserted"] == 6 and body["duplicates"] == 0
    assert set(Node.objects.values_list("hostname", flat=True)) == {"dgx-01", "atlas-07"}
    npu = Accelerator.objects.get(vendor_id="VD-3")
    assert npu.node.hostname == "atlas-07" and npu.index == 3
    assert npu.health == 0
    util = Sample.objects.filter(
        metric__name="accelerator_utilization_ratio", entity__key="GPU-aaa"
    ).order_by("ts")
    assert [s.value for s in util] == [pytest.approx(0.8), pytest.approx(0.9)]
    assert util.last().ts.timestamp() == pytest.approx(now_ms / 1000)
    total = Sample.objects.get(metric__name="accelerator_hbm_total_bytes")
    assert total.value == 4096 * 2**20

    again = send(rw_client, write_request(_series(now_ms)))  # Prometheus resends after a 5xx
    assert again.status_code == 200
    assert again.json()["inserted"] == 0 and again.json()["duplicates"] == 6
    assert Sample.objects.count() == 6
    status = RemoteWriteStatus.objects.get(cluster=cluster)
    assert (status.requests, status.rejected, status.inserted, status.duplicates) == (2, 0, 6, 6)
    assert status.samples == 20 and status.dropped == 8
    assert status.last_success_at is not None


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "headers", "status", "needle"),
    [
        (b"", {}, 400, "empty body"),
        (b"\xff\xff\xff\xff\xff\xff", {}, 400, "snappy"),
        (bytes(cramjam.snappy.compress_raw(b"\x0a\x05\xff")), {}, 400, "WriteRequest"),
        (b"\xff\xff\xff\xff\x0f", {}, 413, "over the limit"),
        (b"x", {"Content-Encoding": "gzip"}, 415, "snappy"),
    ],
)
def test_bad_input_is_a_4xx_in_the_one_error_body(
    rw_client, cluster, body, headers, status, needle
):
    response = send(rw_client, body, **headers)
    assert response.status_code == status, response.content
    payload = response.json()
    assert needle in payload["detail"] and payload["code"]
    assert not Sample.objects.exists()
    assert RemoteWriteStatus.objects.get(cluster=cluster).rejected == 1


@pytest.mark.django_db
def test_unknown_cluster_series_without_name_and_scopes(rw_client, cluster, db):
    now_ms = int(time.time() * 1000)
    response = send(rw_client, write_request(_series(now_ms)), query="cluster=nope")
    assert response.status_code == 400 and response.json()["field"] == "cluster"
    nameless = write_request([({"job": "x"}, [(now_ms, 1)])])
    response = send(rw_client, nameless)
    assert response.status_code == 400 and "__name__" in response.json()["detail"]
    assert send(rw_client, b"x", query="").status_code == 400
    reader = APIClient()
    token = token_create(name="r", scopes=["read"]).plaintext
    reader.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert send(reader, write_request(_series(now_ms))).status_code == 403
    assert send(APIClient(), write_request(_series(now_ms))).status_code in (401, 403)


@pytest.mark.django_db
def test_a_remote_write_2_body_is_a_415_naming_the_supported_message(rw_client, cluster):
    # Current Prometheus sends 2.0 as proto=io.prometheus.write.v2.Request when configured;
    # the parameter used to be dropped and the body decoded as 1.0.
    now_ms = int(time.time() * 1000)
    response = rw_client.generic(
        "POST",
        f"{URL}?cluster={cluster.name}",
        data=write_request(_series(now_ms)),
        content_type="application/x-protobuf;proto=io.prometheus.write.v2.Request",
        HTTP_CONTENT_ENCODING="snappy",
    )
    assert response.status_code == 415
    assert "prometheus.WriteRequest" in response.json()["detail"]
    assert not Sample.objects.exists()


@pytest.mark.django_db
def test_a_1_0_body_that_names_its_message_is_taken(rw_client, cluster):
    now_ms = int(time.time() * 1000)
    response = rw_client.generic(
        "POST",
        f"{URL}?cluster={cluster.name}",
        data=write_request(_series(now_ms)),
        content_type='application/x-protobuf; proto="prometheus.WriteRequest"',
        HTTP_CONTENT_ENCODING="snappy",
    )
    assert response.status_code == 200, response.content
    assert Sample.objects.exists()
