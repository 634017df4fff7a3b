"""Issue 26 §6: remote-write decodes nothing it has not bounded, and one bad series does not
cost the batch.

Replayed as found: a 2.1 MB snappy body (45 MB protobuf, 2.5 M samples) was answered 413 only
after 17.4 s at 774 MiB RSS — the 16/64 MiB caps never applied; a control character in a
label, a 200-character UUID or too many new GPUs refused the whole batch (which Prometheus then
drops for good); remote-write accepted 200 labels where text allows 64. Time and memory are
measured in ``bench/remote_write_bomb.py`` (BENCHMARKS.md), not asserted here.
"""

from __future__ import annotations

import time

import cramjam
import pytest
from rest_framework.test import APIClient

from accounts.services.tokens import token_create
from inventory.models import Accelerator
from telemetry.models import Sample
from telemetry.receivers.remote_write import decode
from tests.remote_write_bombs import bomb
from tests.telemetry.remote_write_helpers import write_request

pytestmark = pytest.mark.django_db
URL = "/api/v1/telemetry/remote-write/?cluster=unified-a"


@pytest.fixture
def prometheus() -> APIClient:
    client = APIClient()
    client.credentials(
        HTTP_AUTHORIZATION=f"Bearer {token_create(name='p', scopes=['ingest']).plaintext}"
    )
    return client


def send(client: APIClient, body: bytes):
    return client.generic(
        "POST",
        URL,
        data=body,
        content_type="application/x-protobuf",
        HTTP_CONTENT_ENCODING="snappy",
    )


def test_a_snappy_bomb_is_refused_before_it_is_decompressed(prometheus, cluster, monkeypatch):
    body, raw_size = bomb(samples_total=2_500_000, per_series=1000, timestamp_ms=10**12)
    assert len(body) < 2.5e6 and raw_size > 40e6  # 2 MB on the wire, 45 MB of protobuf

    def never(*args, **kwargs):
        raise AssertionError("decompressed a body over the cap")

    monkeypatch.setattr(cramjam.snappy, "decompress_raw", never)
    response = send(prometheus, body)
    assert response.status_code == 413
    assert "decompresses to" in response.json()["detail"]
    assert not Sample.objects.exists()


def test_a_body_under_the_size_cap_is_counted_on_the_wire_before_anything_is_built(
    prometheus, cluster, monkeypatch
):
    body, raw_size = bomb(samples_total=400_000, per_series=1000, timestamp_ms=10**12)
    assert raw_size < 8 * 2**20  # under the size cap: only counting can refuse it

    class NoClasses:
        """Stands in for the generated classes: building a message fails the test."""

        class WriteRequest:
            def __init__(self):
                raise AssertionError("built a WriteRequest before counting its samples")

    monkeypatch.setattr(decode, "remote_pb2", NoClasses)
    response = send(prometheus, body)
    assert response.status_code == 413
    assert "at most 100,000 samples" in response.json()["detail"]


def _gpu(uuid: str, index: int, host: str = "dgx-01", **extra: str) -> dict[str, str]:
    labels = {"__name__": "DCGM_FI_DEV_GPU_UTIL", "UUID": uuid, "gpu": str(index)}
    return {**labels, "Hostname": host, "modelName": "NVIDIA H100", **extra}


def test_bad_series_are_dropped_and_counted_per_reason_and_the_rest_is_stored(prometheus, cluster):
    now = int(time.time() * 1000)
    many = {f"l{i}": "x" for i in range(100)}  # text allows 64 labels: one cap for every path
    response = send(
        prometheus,
        write_request(
            [
                (_gpu("GPU-good", 0), [(now, 50)]),
                (_gpu("GPU-ctl", 1, host="dgx\x01-01"), [(now, 50)]),
                (_gpu("GPU-" + "u" * 200, 2), [(now, 50)]),
                (_gpu("GPU-labels", 3, **many), [(now, 50)]),
            ]
        ),
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["dropped"] == {
        "label_control_character": 1,
        "label_too_long": 1,
        "too_many_labels": 1,
    }
    assert body["dropped_series"] == {"label_control_character": 1, "too_many_labels": 1}
    assert body["inserted"] == 1
    assert list(Accelerator.objects.values_list("vendor_id", flat=True)) == ["GPU-good"]


def test_cards_beyond_the_new_entity_cap_are_dropped_not_the_batch(prometheus, cluster, settings):
    settings.TELEMETRY_MAX_NEW_ENTITIES_PER_PUSH = 2
    now = int(time.time() * 1000)
    gpus = [(_gpu(f"GPU-{i}", i), [(now, 10 * i)]) for i in range(5)]
    response = send(prometheus, write_request(gpus))
    assert response.status_code == 200, response.json()
    assert response.json()["dropped"] == {"too_many_new_entities": 3}
    assert Accelerator.objects.count() == 2 and Sample.objects.count() == 2
