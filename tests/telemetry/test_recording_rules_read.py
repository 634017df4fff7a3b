"""The portal reads the shipped recording rules where a server records them (issue 33 §3:
"the page says when it reads a recording rule"): a real Prometheus scraping the exporter
capture and evaluating ``deploy/prometheus/cluster-portal-rules.yml`` answers the fleet KPIs,
curves and rack figures from ``cluster_portal:<metric>:…`` — the same values the query-time
aggregation gives — and says so; a source with a selector (the rules sum the whole server)
and a server without the rules aggregate at query time."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
import yaml

from dashboards.payloads.common import source_text
from inventory.models import Cluster
from telemetry import read
from telemetry.models import PromQLDataSource
from telemetry.read.fleet import HEALTH, SOURCE_PROMQL, SOURCE_PROMQL_RULES
from telemetry.read.promql.client import PromQLClient
from telemetry.read.promql.hosts import hot_chip_ids
from telemetry.read.promql.reads import promql_inventory_sync
from telemetry.read.promql.rules import recording_rules
from telemetry.read.racks import SOURCE_PROMQL_RULES_RACKS
from telemetry.receivers.twin import catalogue_sync
from tests.servers import PrometheusServer
from tests.telemetry.prometheus_fixtures import (  # noqa: F401 - fixtures
    exporters,
    prometheus_required,
    scrape_config,
)
from tests.telemetry.test_read_backends_live import UTIL, _capture_utilization

pytestmark = [pytest.mark.slow, pytest.mark.django_db]


@pytest.fixture(autouse=True)
def loopback_allowed(settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]


@pytest.fixture
def recording_prometheus(tmp_path, prometheus_required, exporters):  # noqa: F811
    """Prometheus scraping the capture every second and evaluating the shipped rules every
    second (the file's own interval is 30 s), once every rule has recorded a few points."""
    rules = recording_rules()
    for group in rules["groups"]:
        group["interval"] = "1s"
    rules_file = tmp_path / "cluster-portal-rules.yml"
    rules_file.write_text(yaml.safe_dump(rules, sort_keys=False, width=10_000))
    config = scrape_config(exporters) + f"rule_files:\n  - {rules_file}\n"
    server = PrometheusServer(tmp_path / "prometheus", config).start()
    client = PromQLClient(cluster="x", url=server.url)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        got = client.query(
            f"count_over_time(cluster_portal:{UTIL}:sum[1m])", at=datetime.now(tz=UTC)
        )
        if got and got[0].points[0][1] >= 5:
            break
        time.sleep(0.5)
    else:
        raise AssertionError(f"the rules never recorded: {server.log.read_text()[-2000:]}")
    try:
        yield server
    finally:
        server.stop()


def _cluster(name: str, url: str, selector: str = "") -> Cluster:
    cluster = Cluster.objects.create(name=name, kind=Cluster.Kind.UNIFIED)
    source = PromQLDataSource.objects.create(cluster=cluster, url=url, selector=selector)
    assert promql_inventory_sync(source) == 4
    return cluster


def test_fleet_figures_are_read_from_the_recording_rules_and_say_so(recording_prometheus):
    catalogue_sync()
    recorded = _cluster("rules-a", recording_prometheus.url)
    # The same server through a selector: the rules cannot be narrowed, so it aggregates.
    live = _cluster("rules-b", recording_prometheus.url, selector='job=~".+"')
    util = _capture_utilization()
    busy = sum(util.values()) / len(util)
    names = ["cluster_cards_total", "cluster_utilization_busy_ratio"]
    end = datetime.now(tz=UTC)
    start = end - timedelta(seconds=30)

    values, sources = read.cluster_figures_latest(recorded, names)
    assert values == {"cluster_cards_total": len(util),
                      "cluster_utilization_busy_ratio": pytest.approx(busy)}  # fmt: skip
    assert set(sources.values()) == {SOURCE_PROMQL_RULES}
    live_values, live_sources = read.cluster_figures_latest(live, names)
    assert live_values == values and set(live_sources.values()) == {SOURCE_PROMQL}
    # The health point from its recorded count and failing chips: the live answer's.
    healthy, health_sources = read.cluster_figures_latest(recorded, ["cluster_cards_healthy"])
    assert health_sources == {"cluster_cards_healthy": SOURCE_PROMQL_RULES}
    assert healthy == read.cluster_figures_latest(live, ["cluster_cards_healthy"])[0]
    assert 0 < healthy["cluster_cards_healthy"] <= len(util)

    series = read.cluster_series(recorded, "cluster_utilization_busy_ratio", start, end)
    assert series is not None and series.source == SOURCE_PROMQL_RULES and series.points
    assert all(p.mean == pytest.approx(busy) for p in series.points)
    live_series = read.cluster_series(live, "cluster_utilization_busy_ratio", start, end)
    assert live_series.source == SOURCE_PROMQL

    racks = read.rack_card_figures(recorded.pk, [UTIL], hot_n=5)
    # No rack in the inventory: the per-rack records, every host under "none".
    assert racks.source == SOURCE_PROMQL_RULES_RACKS
    assert racks.racks[None][UTIL].cards == len(util)
    assert racks.racks[None][UTIL].total == pytest.approx(sum(util.values()))
    assert read.rack_card_figures(live.pk, [UTIL], hot_n=5).source == SOURCE_PROMQL
    health = read.rack_card_figures(recorded.pk, [HEALTH], hot_n=5)
    live_health = read.rack_card_figures(live.pk, [HEALTH], hot_n=5)
    assert health.source == SOURCE_PROMQL_RULES_RACKS
    got, want = health.racks[None][HEALTH], live_health.racks[None][HEALTH]
    assert (got.cards, got.total, got.ones) == (want.cards, want.total, want.ones)
    assert got.cards > 0
    # What the page says beside such a figure.
    assert "recording rules" in source_text(SOURCE_PROMQL_RULES)
    assert "per-rack recording rules" in source_text(SOURCE_PROMQL_RULES_RACKS)


def test_the_overview_page_names_the_recording_rule_it_read(recording_prometheus, client_as):
    catalogue_sync()
    cluster = _cluster("rules-page", recording_prometheus.url)
    payload = (
        client_as("operator").get(f"/api/v1/dashboards/overview/?cluster={cluster.name}").json()
    )
    hints = " ".join(str(kpi.get("hint", "")) for kpi in payload["kpis"])
    assert "recording rules" in hints, hints


def test_the_hotspot_candidates_are_read_from_the_recorded_top_chips(
    recording_prometheus, monkeypatch
):
    catalogue_sync()
    recorded = _cluster("rules-hot", recording_prometheus.url)
    live = _cluster("rules-hot-live", recording_prometheus.url, selector='job=~".+"')
    asked: list[str] = []
    query = PromQLClient.query

    def spy(self, expr, *, at):
        asked.append(expr)
        return query(self, expr, at=at)

    monkeypatch.setattr(PromQLClient, "query", spy)
    at = datetime.now(tz=UTC)
    got = hot_chip_ids(recorded.promql_source, n=5, at=at)
    assert any("dcgm_top20" in expr for expr in asked)
    asked.clear()
    want = hot_chip_ids(live.promql_source, n=5, at=at)
    assert not any("cluster_portal:" in expr for expr in asked)
    assert got == want and got["DCGM_"]
