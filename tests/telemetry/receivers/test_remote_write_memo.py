"""The receiver's per-process memo of metric, card and node ids (``telemetry.catalogue.known``):
what it spares, and that it never stores a point twice, on a stale id or a resend."""

from __future__ import annotations

import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from inventory.models import Accelerator, Node
from telemetry.catalogue.known import KNOWN
from telemetry.models import Entity, RemoteWriteStatus, Sample
from tests.telemetry.receivers.test_remote_write import rw_client, send  # noqa: F401 - the fixture
from tests.telemetry.remote_write_helpers import write_request

pytestmark = pytest.mark.django_db


def _gpu(index: int, host: str = "dgx-01") -> dict[str, str]:
    return {
        "gpu": str(index),
        "UUID": f"GPU-{host}-{index}",
        "modelName": "NVIDIA H100 80GB HBM3",
        "Hostname": host,
        "instance": f"{host}:9400",
        "job": "dcgm",
    }


def _body(now_ms: int, cards: list[dict[str, str]]) -> bytes:
    series = []
    for labels in cards:
        series.append(({"__name__": "DCGM_FI_DEV_GPU_UTIL", **labels}, [(now_ms, 50)]))
        series.append(({"__name__": "DCGM_FI_DEV_MEM_COPY_UTIL", **labels}, [(now_ms, 7)]))
    return write_request(series)


@pytest.fixture
def sent(rw_client, django_capture_on_commit_callbacks):  # noqa: F811
    """Send a request as the receiver would commit it: memo entries are filled on commit."""

    def _send(body: bytes):
        with django_capture_on_commit_callbacks(execute=True):
            return send(rw_client, body)

    return _send


def _ok(response) -> dict:
    assert response.status_code == 200, response.json()
    return response.json()


def test_a_known_fleet_is_written_without_resolving_it_again(sent, cluster):  # noqa: F811
    now = int(time.time() * 1000)
    cards = [_gpu(i) for i in range(8)]
    _ok(sent(_body(now - 15000, cards)))
    with CaptureQueriesContext(connection) as queries:
        body = _ok(sent(_body(now, cards)))
    assert body["inserted"] == 16
    # (The one UPDATE marking the cards seen reads the card table, and the insert checks that
    # the memoised ids still exist — unquoted, by primary key; nothing else reads them.)
    sql = " ".join(q["sql"] for q in queries.captured_queries if not q["sql"].startswith("UPDATE"))
    for table in ("entity", "accelerator", "node", "metricdefinition"):
        assert f'FROM "monitoring_{table}"' not in sql  # nothing resolved again
        assert f'INTO "monitoring_{table}"' not in sql  # nor offered for registration


def test_a_new_card_misses_the_memo_and_is_registered(sent, cluster):  # noqa: F811
    now = int(time.time() * 1000)
    _ok(sent(_body(now - 15000, [_gpu(0)])))
    body = _ok(sent(_body(now, [_gpu(0), _gpu(1, host="dgx-02")])))
    assert body["inserted"] == 4
    assert Accelerator.objects.filter(node__hostname="dgx-02", index=1).exists()
    new = Entity.objects.get(key="GPU-dgx-02-1")
    assert Sample.objects.filter(entity=new).count() == 2


def test_a_card_deleted_after_it_was_memoised_is_registered_again(sent, cluster):  # noqa: F811
    now = int(time.time() * 1000)
    _ok(sent(_body(now - 15000, [_gpu(0), _gpu(1)])))
    generation = KNOWN.generation
    old = Entity.objects.get(key="GPU-dgx-01-1")
    Accelerator.objects.filter(node__hostname="dgx-01", index=1).delete()  # cascades
    assert not Entity.objects.filter(pk=old.pk).exists()

    body = _ok(sent(_body(now, [_gpu(0), _gpu(1)])))

    assert body["inserted"] == 4
    assert KNOWN.generation > generation  # the stale id failed its foreign key: memo cleared
    again = Entity.objects.get(key="GPU-dgx-01-1")
    assert again.pk != old.pk and again.accelerator.vendor_id == "GPU-dgx-01-1"
    assert Sample.objects.filter(entity=again).count() == 2


def test_a_host_move_misses_the_memo(sent, cluster):  # noqa: F811
    now = int(time.time() * 1000)
    _ok(sent(_body(now - 15000, [_gpu(0)])))
    moved = {**_gpu(0), "Hostname": "dgx-09", "instance": "dgx-09:9400"}
    _ok(sent(_body(now, [moved])))
    # Registration ran for the new description: the new host is in the inventory.
    assert Node.objects.filter(hostname="dgx-09").exists()


def test_a_retried_request_stores_nothing_new(sent, cluster):  # noqa: F811
    now = int(time.time() * 1000)
    body = _body(now, [_gpu(i) for i in range(4)])
    first = _ok(sent(body))
    stored = set(Sample.objects.values_list("metric_id", "entity_id", "ts", "value"))
    second = _ok(sent(body))
    KNOWN.clear()  # another worker process, with an empty memo, gets the same resend
    third = _ok(sent(body))
    assert first["inserted"] == 8
    assert second["inserted"] == third["inserted"] == 0
    assert second["duplicates"] == third["duplicates"] == 8
    assert set(Sample.objects.values_list("metric_id", "entity_id", "ts", "value")) == stored
    status = RemoteWriteStatus.objects.get(cluster=cluster)
    assert status.requests == 3 and status.inserted == 8 and status.duplicates == 16


def test_a_card_is_marked_seen_once_per_half_interval_not_once_per_request(
    sent,  # noqa: F811
    cluster,
):
    now = int(time.time() * 1000)
    card = Accelerator.objects.filter  # the inventory row behind dgx-01/0
    _ok(sent(_body(now - 30000, [_gpu(0)])))
    first = card(node__hostname="dgx-01", index=0).get().last_seen
    assert first.timestamp() == pytest.approx((now - 30000) / 1000)
    # Another field of the same scrape, a few seconds later in another request: not rewritten.
    _ok(sent(_body(now - 27000, [_gpu(0)])))
    assert card(node__hostname="dgx-01", index=0).get().last_seen == first
    # The next scrape (an interval later) is.
    _ok(sent(_body(now - 15000, [_gpu(0)])))
    later = card(node__hostname="dgx-01", index=0).get().last_seen
    assert later.timestamp() == pytest.approx((now - 15000) / 1000)
