"""Rack heatmaps on a PromQL source are summed per host by the server (issue 33 §3): on a real
VictoriaMetrics holding an awkward capture, the per-host answer equals the per-card fold
through the ingestion mapping host by host; the hardware page's rack cells, health counts and
hotspots come from it; and the answers grow with the hosts, never with the cards."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from dashboards.payloads.hardware import hardware_payload
from dashboards.selectors.hardware import hardware, node_detail, rack_detail
from inventory.models import Cluster, Node, Rack
from inventory.services.topology import Placement, nodes_ensure
from telemetry.models import PromQLDataSource
from telemetry.read import rack_card_figures
from telemetry.read.fleet import CARD_METRICS, HEALTH
from telemetry.read.promql import hosts as promql_hosts
from telemetry.read.promql.client import PromQLClient
from telemetry.read.promql.fleet import _fold_per_card
from telemetry.read.promql.reads import _Reader, promql_inventory_sync
from telemetry.read.racks import SOURCE_PROMQL
from telemetry.receivers.promql_sync import promql_source_sync
from tests.telemetry.test_promql_fleet_aggregation import _capture_rows, _load

pytestmark = [pytest.mark.slow, pytest.mark.django_db]


@pytest.fixture
def engine(victoria_metrics):
    return victoria_metrics


def _cluster(engine, name: str) -> tuple[Cluster, PromQLDataSource]:
    cluster = Cluster.objects.create(name=name, kind=Cluster.Kind.UNIFIED)
    return cluster, PromQLDataSource.objects.create(cluster=cluster, url=engine.url)


def test_per_host_figures_equal_the_per_card_fold_host_by_host(engine):
    now = time.time()
    _load(engine, now=now)
    _cluster_row, source = _cluster(engine, "vm-hosts")
    at = datetime.fromtimestamp(now, tz=UTC)
    figures = promql_hosts.host_figures(source, names=CARD_METRICS, at=at)
    reader = _Reader(source)
    grid = promql_hosts.instant_grid(reader, at=at)
    for name in CARD_METRICS:
        if name == HEALTH:
            continue  # per GPU here, per chip in the fold: checked below
        per_card = _fold_per_card(reader, name, grid)
        got = {host: metrics[name] for host, metrics in figures.items() if name in metrics}
        assert set(got) == set(per_card), name
        for host, expected in per_card.items():
            assert (got[host].cards, got[host].ones) == (expected.cards, expected.ones), name
            assert got[host].total == pytest.approx(expected.total, rel=1e-12), (name, host)
    # The awkward rows, read against the capture's newest scrape.
    newest = _capture_rows(11)
    assert figures["dgx-01"]["accelerator_temperature_celsius"].cards == 2  # GPU-b once
    assert figures["dgx-01"]["accelerator_power_watts"].cards == 1  # the sentinel dropped
    assert any("GPU-b" in row and "XID_ERRORS" in row and row.endswith(" 79") for row in newest)
    # Health per GPU: GPU-a and the UUID-less GPU healthy, GPU-b failing (XID 79); npu-exporter
    # VD-0 healthy and VD-1 reporting -1 (unknown).
    dgx, atlas = figures["dgx-01"][HEALTH], figures["atlas-07"][HEALTH]
    assert (dgx.cards, dgx.ones) == (3, 2)
    assert (atlas.cards, atlas.ones, atlas.total) == (2, 1, 0.0)


def test_the_hardware_page_reads_racks_health_and_hotspots_from_the_server(engine):
    now = time.time()
    _load(engine, now=now)
    cluster, source = _cluster(engine, "vm-racks")
    promql_source_sync(source=source)
    # An operator places the discovered nodes (as an inventory import does).
    placements = {host: Placement("sn0", f"sn0/{host}-rack") for host in ("dgx-01", "atlas-07")}
    nodes_ensure(cluster=cluster, hosts=placements, placements=placements)

    figures = rack_card_figures(cluster.pk, CARD_METRICS, hot_n=5)
    assert figures.source == SOURCE_PROMQL
    data = hardware(cluster)
    cells = {cell.rack: cell for cell in data.racks}
    # dgx-01: utilisation of GPU-a (PROF 0.5 + i/100), GPU-b ((10 + i) %), the MIG slice (1.0)
    # and GPU-5 (40 %) at the scrape i the engine answers for "now"; atlas-07: VD-0 (55 + i) %.
    scrape = round((cells["dgx-01-rack"].utilization * 4 - 2.0) * 50)
    assert 0 <= scrape <= 11
    dgx = (0.5 + scrape / 100 + (10 + scrape) / 100 + 1.0 + 0.40) / 4
    assert cells["dgx-01-rack"].utilization == pytest.approx(dgx)
    assert cells["atlas-07-rack"].utilization == pytest.approx((55 + scrape) / 100)
    assert cells["atlas-07-rack"].hbm_used_ratio == pytest.approx(0.5)
    assert data.health["healthy"] == 3 and data.health["unhealthy"] == 1
    hottest = [row.card for row in data.hotspots.hottest]
    assert hottest[0].startswith("dgx-01/") and len(hottest) == 3
    cards_kpi = hardware_payload(data, str, str)["kpis"][0]
    assert cards_kpi["key"] == "cards_total" and "PromQL" in cards_kpi["hint"]
    # Drill-down reads the rack's cards only, by their chip label.
    rack = Rack.objects.get(name="sn0/dgx-01-rack")
    [node_row] = rack_detail(rack)
    node = Node.objects.get(cluster=cluster, hostname="dgx-01")
    cards = {row.name: row.values for row in node_detail(node)}
    assert cards["dgx-01/0"]["accelerator_temperature_celsius"] == 70.0
    assert node_row.values["accelerator_temperature_celsius"] is not None
    sick = {row.health for row in data.hotspots.least_healthy}
    assert data.hotspots.least_healthy_total == 2 and sick == {"unhealthy", "unknown"}


def test_the_per_host_answers_grow_with_the_hosts_not_the_cards(engine, monkeypatch):
    now = time.time()
    hosts = 40  # 320 cards
    lines = []
    for i in range(4):
        at_ms = int((now - (3 - i) * 15) * 1000)
        for h in range(hosts):
            for g in range(8):
                labels = f'gpu="{g}",UUID="GPU-{h}-{g}",Hostname="n{h}"'
                lines.append(f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} {(h + g + i) % 100} {at_ms}")
                lines.append(f"DCGM_FI_DEV_GPU_TEMP{{{labels}}} {40 + (h * 8 + g) % 45} {at_ms}")
    engine.import_text("\n".join(lines) + "\n")
    engine.wait_for_series('{__name__=~"DCGM_FI_DEV_GPU_UTIL|DCGM_FI_DEV_GPU_TEMP"}', hosts * 16)
    cluster, source = _cluster(engine, "vm-many-hosts")
    assert promql_inventory_sync(source) == hosts * 8
    answered: list[int] = []
    original = PromQLClient.query

    def counting(self, expr, **kwargs):
        result = original(self, expr, **kwargs)
        answered.append(len(result))
        return result

    monkeypatch.setattr(PromQLClient, "query", counting)
    figures = rack_card_figures(cluster.pk, CARD_METRICS, hot_n=5)
    cards = sum(m["accelerator_utilization_ratio"].cards for m in figures.racks.values())
    assert cards == hosts * 8
    # Per host: total, cards and ones of each of 40 hosts; top-5 answers; the hot chips' values.
    assert max(answered) <= 3 * hosts, answered
    assert figures.hot.ids.size <= 10  # hottest and busiest 5, nothing failing
    hottest = float(figures.hot.get("accelerator_temperature_celsius").max())
    assert hottest == 84.0
