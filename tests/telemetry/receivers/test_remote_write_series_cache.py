"""The per-process memo of what a series' labels map to (``telemetry.families.series_cache``):
a known series skips the mapping, and any change of its labels or of the cluster's host rules
is mapped afresh — moves recorded, new MIG slices their own entities, nothing stored twice."""

from __future__ import annotations

import time

import pytest

from inventory.models import Accelerator, AcceleratorMove
from telemetry.families.series_cache import SERIES, SeriesCache
from telemetry.models import AttributionInterval, Entity, Sample
from tests.telemetry.receivers.test_remote_write import rw_client, send  # noqa: F401 - the fixture
from tests.telemetry.remote_write_helpers import write_request

pytestmark = pytest.mark.django_db


def _gpu(index: int, host: str = "dgx-01", **extra: str) -> dict[str, str]:
    return {
        "gpu": str(index),
        "UUID": f"GPU-cache-{index}",
        "modelName": "NVIDIA H100 80GB HBM3",
        "Hostname": host,
        "instance": f"{host}:9400",
        "job": "dcgm",
        **extra,
    }


def _body(now_ms: int, cards: list[dict[str, str]]) -> bytes:
    return write_request(
        [({"__name__": "DCGM_FI_DEV_GPU_TEMP", **labels}, [(now_ms, 50)]) for labels in cards]
    )


def _ok(response) -> dict:
    assert response.status_code == 200, response.json()
    return response.json()


def test_a_known_series_is_mapped_from_the_cache(rw_client, cluster):  # noqa: F811
    SERIES.clear()
    now = int(time.time() * 1000)
    _ok(send(rw_client, _body(now - 15000, [_gpu(0), _gpu(1)])))
    assert SERIES.misses == 2 and SERIES.hits == 0
    body = _ok(send(rw_client, _body(now, [_gpu(0), _gpu(1)])))
    assert SERIES.hits == 2 and SERIES.misses == 2
    assert body["inserted"] == 2
    assert Sample.objects.count() == 4


def test_a_card_moved_to_another_host_is_recorded_as_a_move(rw_client, cluster):  # noqa: F811
    now = int(time.time() * 1000)
    _ok(send(rw_client, _body(now - 30000, [_gpu(0)])))
    _ok(send(rw_client, _body(now - 15000, [_gpu(0)])))  # cached under dgx-01
    _ok(send(rw_client, _body(now, [_gpu(0, host="dgx-02")])))
    card = Accelerator.objects.get(vendor_id="GPU-cache-0")
    assert card.node.hostname == "dgx-02"
    (move,) = AcceleratorMove.objects.all()
    assert (move.from_hostname, move.to_hostname) == ("dgx-01", "dgx-02")
    entity = Entity.objects.get(key="GPU-cache-0")
    assert Sample.objects.filter(entity=entity).count() == 3  # one history, both hosts


def test_a_new_mig_slice_of_a_cached_gpu_is_its_own_entity(rw_client, cluster):  # noqa: F811
    now = int(time.time() * 1000)
    _ok(send(rw_client, _body(now - 15000, [_gpu(0)])))
    _ok(send(rw_client, _body(now - 15000, [_gpu(0)])))  # the GPU's labels, cached
    slice_labels = _gpu(0, GPU_I_ID="1", GPU_I_PROFILE="3g.40gb", GPU_CI_ID="0")
    body = _ok(send(rw_client, _body(now, [_gpu(0), slice_labels])))
    assert body["inserted"] == 2
    assert Entity.objects.filter(key="GPU-cache-0/gi1").exists()
    gpu = Entity.objects.get(key="GPU-cache-0")
    assert Sample.objects.filter(entity=gpu).count() == 2  # the slice's point is not the GPU's


def test_a_relabelled_series_maps_to_its_new_holder(rw_client, cluster):  # noqa: F811
    now = int(time.time() * 1000)
    held = _gpu(0, namespace="team-a", pod="train-0")
    _ok(send(rw_client, _body(now - 30000, [held])))
    _ok(send(rw_client, _body(now - 15000, [held])))  # cached with its pod
    _ok(send(rw_client, _body(now, [_gpu(0, namespace="team-b", pod="serve-0")])))
    pods = list(AttributionInterval.objects.order_by("started_at").values_list("pod", "ended_at"))
    assert [pod for pod, _ in pods] == ["train-0", "serve-0"]
    assert pods[0][1] is not None and pods[1][1] is None  # the first holder's time ended


def test_a_clusters_new_host_labels_are_not_answered_from_the_cache(rw_client, cluster):  # noqa: F811
    now = int(time.time() * 1000)
    labels = {**_gpu(0), "kubernetes_node": "k8s-node-7"}
    _ok(send(rw_client, _body(now - 15000, [labels])))
    assert Accelerator.objects.get(vendor_id="GPU-cache-0").node.hostname == "dgx-01"
    cluster.host_labels = "kubernetes_node, instance"
    cluster.save()
    _ok(send(rw_client, _body(now, [labels])))
    assert Accelerator.objects.get(vendor_id="GPU-cache-0").node.hostname == "k8s-node-7"


def test_the_cache_is_bounded_and_drops_the_least_recently_used():
    cache = SeriesCache(max_entries=2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "b" is now the least recently used
    cache.put("c", 3)
    assert len(cache) == 2
    assert cache.get("b") is None and cache.get("a") == 1 and cache.get("c") == 3
