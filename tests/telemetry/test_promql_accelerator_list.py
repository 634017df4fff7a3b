"""The accelerator list on a PromQL source asks for its page's cards by their chip label
(issue 33 "Speed": at 102,400 cards the fleet-wide answer passed the answer cap and the list
showed no values): a page's values arrive under a cap the fleet's answer cannot pass, and a
chip named by host and index (no chip label) still takes the fleet-wide read."""

from __future__ import annotations

import time

import pytest
from rest_framework.test import APIClient

from accounts.services.tokens import token_create
from inventory.models import Cluster
from telemetry.models import PromQLDataSource
from telemetry.read.promql import hosts
from telemetry.receivers.promql_sync import promql_source_sync
from telemetry.receivers.twin import catalogue_sync
from tests.telemetry.prometheus_fixtures import victoria_metrics  # noqa: F401 - fixture

pytestmark = [pytest.mark.slow, pytest.mark.django_db]
UTIL = "accelerator_utilization_ratio"
HOSTS, GPUS = 20, 8


def _fleet(now: float) -> str:
    at_ms = int(now * 1000)
    lines = [
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="{g}",UUID="GPU-list-{h:02d}-{g}",Hostname="l{h:02d}",'
        f'modelName="H100"}} {h + g} {at_ms}'
        for h in range(HOSTS)
        for g in range(GPUS)
    ]
    lines.append(f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",Hostname="l99"}} 42 {at_ms}')  # no UUID
    return "\n".join(lines) + "\n"


def _page(cluster: Cluster, size: int, page: int = 1) -> list[dict]:
    client = APIClient()
    client.credentials(
        HTTP_AUTHORIZATION=f"Bearer {token_create(name='list', scopes=['read']).plaintext}"
    )
    answer = client.get(
        "/api/v1/accelerators/", {"cluster": cluster.name, "page_size": size, "page": page}
    )
    assert answer.status_code == 200, answer.content
    return answer.json()["results"]


def test_a_page_of_cards_has_its_values_under_a_cap_the_fleet_answer_passes(
    victoria_metrics,  # noqa: F811
    settings,
    monkeypatch,
):
    victoria_metrics.import_text(_fleet(time.time()))
    victoria_metrics.wait_for_series("DCGM_FI_DEV_GPU_UTIL", HOSTS * GPUS + 1)
    catalogue_sync()
    cluster = Cluster.objects.create(name="vm-list", kind=Cluster.Kind.UNIFIED)
    source = PromQLDataSource.objects.create(cluster=cluster, url=victoria_metrics.url)
    assert promql_source_sync(source=source).cards == HOSTS * GPUS + 1

    settings.PROMQL_MAX_RESPONSE_BYTES = 6_000  # the fleet's answer is ~30 kB; 8 cards ~2 kB
    # A page's chips asked for in alternations short enough for the server's query limit
    # (VictoriaMetrics' -search.maxQueryLen: 16 KiB): here four UUIDs per query.
    monkeypatch.setattr(hosts, "MAX_PATTERN_CHARS", 70)
    rows = _page(cluster, 8)
    assert [row["latest_status"] for row in rows] == ["ok"] * 8
    assert {row["vendor_id"]: row["latest"][UTIL] for row in rows} == pytest.approx(
        {f"GPU-list-00-{g}": g / 100 for g in range(GPUS)}
    )
    # The host-and-index chip is asked for by the fleet-wide read: refused under this cap
    # and said so, never shown with a wrong value.
    (last,) = _page(cluster, 8, page=HOSTS + 1)
    assert last["latest_status"] == "unavailable" and last["latest"] == {}
    settings.PROMQL_MAX_RESPONSE_BYTES = 8_000_000
    time.sleep(16)  # the source's back-off after the refused read
    (last,) = _page(cluster, 8, page=HOSTS + 1)
    assert last["latest"][UTIL] == pytest.approx(0.42)
