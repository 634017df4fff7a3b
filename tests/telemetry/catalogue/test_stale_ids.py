"""No stale ids (issue 31 §5): a transaction that created a source, entities and a metric and
then died leaves nothing in the per-process memos, the next writes store only ids that exist,
and the pages stay whole (values under an id with no source row: tests/rollout/test_gate_evidence.py)."""

from __future__ import annotations

import time

import pytest
from django.db import transaction
from django.urls import reverse

from telemetry.catalogue.known import KNOWN
from telemetry.models import Entity, MetricDefinition, Sample, SampleSource
from telemetry.store import provenance
from tests.telemetry.receivers.test_remote_write import rw_client, send  # noqa: F401 - the fixture
from tests.telemetry.remote_write_helpers import write_request

pytestmark = pytest.mark.django_db

LABELS = {
    "gpu": "0",
    "UUID": "GPU-stale-0",
    "modelName": "NVIDIA H100 80GB HBM3",
    "Hostname": "dgx-09",
    "instance": "dgx-09:9400",
    "job": "dcgm",
}


class Killed(Exception):
    """The worker dies after the write, before its transaction commits."""


def _body(now_ms: int) -> bytes:
    return write_request(
        [
            ({"__name__": "DCGM_FI_DEV_GPU_UTIL", **LABELS}, [(now_ms, 50)]),
            ({"__name__": "DCGM_FI_DEV_MEM_COPY_UTIL", **LABELS}, [(now_ms, 3)]),
        ]
    )


def test_a_write_killed_before_commit_leaves_no_ids_behind_and_the_next_one_is_whole(
    rw_client,  # noqa: F811
    cluster,
    client_as,
    django_capture_on_commit_callbacks,
):
    now = int(time.time() * 1000)
    metrics_before = MetricDefinition.objects.count()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        with pytest.raises(Killed), transaction.atomic():
            assert send(rw_client, _body(now - 15000)).status_code == 200
            assert Entity.objects.filter(key="GPU-stale-0").exists()  # made in there
            raise Killed
    assert callbacks == []  # nothing the dead transaction made reaches a memo
    assert len(KNOWN) == 0 and provenance._SOURCE_IDS == {}
    assert not SampleSource.objects.exists() and not Sample.objects.exists()
    assert MetricDefinition.objects.count() == metrics_before

    with django_capture_on_commit_callbacks(execute=True):
        body = send(rw_client, _body(now)).json()
    assert body["inserted"] == 2, body
    stored = list(Sample.objects.values_list("source_id", "entity_id", "metric_id"))
    assert {s for s, _, _ in stored} == set(SampleSource.objects.values_list("pk", flat=True))
    assert {e for _, e, _ in stored} <= set(Entity.objects.values_list("pk", flat=True))
    assert {m for _, _, m in stored} <= set(MetricDefinition.objects.values_list("pk", flat=True))
    # The memo now names the committed rows only, and the next request is served from it.
    assert provenance._SOURCE_IDS == {
        k: v for k, v in SampleSource.objects.values_list("key", "pk")
    }
    with django_capture_on_commit_callbacks(execute=True):
        assert send(rw_client, _body(now + 15000)).json()["inserted"] == 2
    operator = client_as("operator")
    for page in ("home", "dashboard-hardware", "dashboard-overview", "exporters"):
        assert operator.get(reverse(page)).status_code == 200, page
