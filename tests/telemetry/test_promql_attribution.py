"""Attribution on a PromQL-only cluster, against a real Prometheus scraping fixture exporters
whose cards carry pod labels: each sync samples the holders into the same attribution
intervals the store path writes, showback bills them as measured, and a server that is down
is recorded on the source with nothing written."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from cost.allocation import Basis
from cost.models import CostAssumptions
from cost.selectors import cluster_cost
from inventory.models import Cluster, Workload
from telemetry.models import AttributionInterval, PromQLDataSource, Sample
from telemetry.read.promql.client import DataSourceUnavailable, PromQLClient
from telemetry.receivers.promql_sync import promql_source_sync
from telemetry.receivers.twin import catalogue_sync
from telemetry.tasks import promql_sources_sync
from tests.cost.test_cost_page import INPUTS
from tests.servers import ExporterFixture, PrometheusServer, free_port
from tests.telemetry.prometheus_fixtures import scrape_config

pytestmark = [pytest.mark.slow, pytest.mark.django_db]
H100 = 'modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-01"'


class HeldExporters:
    """dcgm-exporter with its Kubernetes pod mapping and npu-exporter with its own (``pod_name``
    / ``pod_namespace``); ``pods`` says who holds each card now (empty: free)."""

    def __init__(self) -> None:
        self.pods = {"GPU-aaa": "llama-70b-0", "GPU-bbb": "", "VD-0": "llama-70b-1"}

    def dcgm(self) -> str:
        rows = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
        power = ["# TYPE DCGM_FI_DEV_POWER_USAGE gauge"]
        for gpu, uuid in enumerate(("GPU-aaa", "GPU-bbb")):
            pod = self.pods[uuid]
            held = f',namespace="acme-bank",pod="{pod}",container="main"' if pod else ""
            rows.append(f'DCGM_FI_DEV_GPU_UTIL{{gpu="{gpu}",UUID="{uuid}",{H100}{held}}} 80')
            power.append(f'DCGM_FI_DEV_POWER_USAGE{{gpu="{gpu}",UUID="{uuid}",{H100}{held}}} 500')
        return "\n".join(rows + power) + "\n"

    def npu(self) -> str:
        pod = self.pods["VD-0"]
        held = f',pod_namespace="acme-bank",pod_name="{pod}"' if pod else ""
        return (
            "# TYPE npu_chip_info_utilization gauge\n"
            f'npu_chip_info_utilization{{id="0",model_name="Ascend910B",vdie_id="VD-0"{held}}} 55\n'
        )


@pytest.fixture(autouse=True)
def loopback_allowed(settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]


@pytest.fixture
def held(tmp_path, prometheus_required):
    exporters = HeldExporters()
    fixture = ExporterFixture({"/dcgm": exporters.dcgm, "/npu": exporters.npu})
    server = PrometheusServer(tmp_path / "prometheus", scrape_config(fixture)).start()
    _wait_for(
        server,
        'count_over_time({__name__=~"DCGM_FI_DEV_GPU_UTIL|npu_chip_info_utilization"}[1m])',
        8,
    )
    catalogue_sync()
    cluster = Cluster.objects.create(name="thanos-held", kind=Cluster.Kind.UNIFIED)
    source = PromQLDataSource.objects.create(cluster=cluster, url=server.url)
    try:
        yield exporters, server, source
    finally:
        server.stop()
        fixture.stop()


def _wait_for(server: PrometheusServer, expr: str, points: int) -> None:
    client, deadline = PromQLClient(cluster="x", url=server.url), time.monotonic() + 60
    while time.monotonic() < deadline:
        got = client.query(expr, at=datetime.now(tz=UTC))
        if got and min(p[1] for s in got for p in s.points) >= points:
            return
        time.sleep(0.5)
    raise AssertionError(f"Prometheus never scraped: {server.log.read_text()[-2000:]}")


def _holders(cluster: Cluster) -> dict[tuple[str, str], int]:
    rows = AttributionInterval.objects.filter(cluster=cluster).select_related("entity")
    out: dict[tuple[str, str], int] = {}
    for row in rows:
        out[(row.entity.key, row.pod)] = out.get((row.entity.key, row.pod), 0) + 1
    return out


def test_each_sync_samples_the_pods_into_intervals_and_a_new_pod_starts_its_own(held):
    exporters, server, source = held
    now = datetime.now(tz=UTC)
    for seconds_ago in (4, 2, 0):
        result = promql_source_sync(source=source, at=now - timedelta(seconds=seconds_ago))
        assert (result.cards, result.held) == (3, 2)
    rows = AttributionInterval.objects.filter(cluster=source.cluster).select_related("entity")
    by_card = {row.entity.key: row for row in rows}
    assert set(by_card) == {"GPU-aaa", "VD-0"}  # the free card makes none
    gpu = by_card["GPU-aaa"]
    assert (gpu.namespace, gpu.pod, gpu.container, gpu.host) == (
        "acme-bank", "llama-70b-0", "main", "dgx-01",
    )  # fmt: skip
    assert by_card["VD-0"].namespace == "acme-bank"  # npu-exporter's pod_namespace
    assert gpu.observations == 3 and gpu.step_seconds == pytest.approx(2, abs=0.01)
    assert (gpu.last_seen_at - gpu.started_at).total_seconds() == pytest.approx(4, abs=0.01)
    assert not Sample.objects.exists()  # nothing is copied from the server

    exporters.pods["GPU-aaa"] = "other-0"
    time.sleep(2.5)  # a scrape or two: the old series goes stale, the new one is there
    promql_source_sync(source=source)
    assert _holders(source.cluster) == {
        ("GPU-aaa", "llama-70b-0"): 1,
        ("GPU-aaa", "other-0"): 1,
        ("VD-0", "llama-70b-1"): 1,
    }
    old = AttributionInterval.objects.get(cluster=source.cluster, pod="llama-70b-0")
    assert old.ended_at is not None


def test_a_promql_cluster_with_pod_labels_is_billed_measured_card_seconds(held, tenants):
    exporters, server, source = held
    CostAssumptions.objects.create(**INPUTS)
    # The ledger bills by whole hours, each priced from that hour's own power curve: syncs
    # straddling an hour boundary would leave the new hour's first seconds without a curve
    # point (so unpriced). Start clear of the boundary rather than assert a timing accident.
    into_hour = time.time() % 3600
    if into_hour < 40:
        time.sleep(40 - into_hour)
    # The ledger reads the derived curve at a 15 s step on the epoch grid: its newest point
    # can lie up to 15 s before `now`, so Prometheus must hold more than that (8 scrapes did
    # not, now and then: a ledger with no hour at all).
    _wait_for(server, 'count_over_time({__name__="DCGM_FI_DEV_GPU_UTIL"}[1m])', 20)
    now = datetime.now(tz=UTC)
    for seconds_ago in (4, 2, 0):
        promql_source_sync(source=source, at=now - timedelta(seconds=seconds_ago))
    chat = Workload.objects.create(
        tenant=tenants["acme"],
        cluster=source.cluster,
        name="llama-chat",
        kind="inference",
        cards_requested=4,
        series_selector='namespace="acme-bank", pod=~"llama-70b-.*"',
    )
    # Coverage comes from the derived power curve, read at a 15 s step: a window reaching
    # 30 s past now holds a point or two of this seconds-old Prometheus whatever the phase.
    # Billed up to a `now` past the last sync's interval (a sync holds its card one step, 2 s,
    # beyond it): the ledger never bills time that has not happened yet.
    cost = cluster_cost(
        source.cluster,
        now - timedelta(minutes=10),
        now + timedelta(seconds=30),
        now=now + timedelta(seconds=3),
    )
    assert cost.ledger.basis[chat.pk] == Basis.MEASURED
    # Two cards, each seen at three syncs 2 s apart: 4 s plus one sync step (2 s) each.
    measured = sum(hour.held_card_seconds for hour in cost.ledger.hours)
    assert measured == pytest.approx(2 * 6, abs=0.5)
    # Billed is that, capped by what the seconds-old Prometheus covers (cards × covered).
    billed = cost.ledger.line(chat.pk).card_seconds
    assert 0 < billed <= measured + 1e-6
    assert billed == pytest.approx(min(measured, 3 * cost.ledger.covered_seconds), rel=0.01)


def test_the_sync_api_answers_how_many_cards_are_held(held, client_as):
    exporters, server, source = held
    response = client_as("operator").post(reverse("api:promql-source-sync", args=[source.pk]))
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["cards"], body["held"], body["attribution"]["started"]) == (3, 2, 2)


def test_the_periodic_task_syncs_every_enabled_source(held):
    exporters, server, source = held
    assert promql_sources_sync() == {"synced": 1, "unavailable": 0}
    assert len(_holders(source.cluster)) == 2


def test_a_source_that_is_down_records_its_error_and_writes_nothing(db, prometheus_required):
    catalogue_sync()
    cluster = Cluster.objects.create(name="thanos-down", kind=Cluster.Kind.UNIFIED)
    source = PromQLDataSource.objects.create(
        cluster=cluster, url=f"http://127.0.0.1:{free_port()}", timeout_seconds=0.5
    )
    with pytest.raises(DataSourceUnavailable):
        promql_source_sync(source=source)
    source.refresh_from_db()
    assert source.last_error and source.last_error_at is not None
    assert "127.0.0.1" in source.last_error  # staff see where; the API's 503 does not say
    assert not AttributionInterval.objects.filter(cluster=cluster).exists()
    assert not cluster.nodes.exists()
    assert promql_sources_sync() == {"synced": 0, "unavailable": 1}
