"""Every page works the same for a cluster fed only by its exporters (issue 22 part 3).

The cluster is built from the real captures through the real ingestion service
(``exporter_cluster``); the figures expected are read from those captures, not typed in.
"""

# ruff: noqa: F811 (pytest fixtures imported from dashboards_fixtures are used as arguments)

from __future__ import annotations

import re

import pytest

from tests.dashboards.dashboards_fixtures import exporter_cluster  # noqa: F401
from tests.telemetry.prometheus_fixtures import DCGM_TEXT, NpuExporter


def _capture(family: str) -> list[float]:
    text = DCGM_TEXT + NpuExporter()()
    return [float(v) for v in re.findall(rf"^{family}{{[^}}]*}} (-?\d+)", text, flags=re.M)]


def _kpis(client) -> dict[str, dict]:
    body = client.get("/api/v1/dashboards/overview/?cluster=real-a&range=1h").json()
    return {item["key"]: item for item in body["kpis"]}, body


@pytest.mark.django_db
def test_the_overview_of_an_exporter_fed_cluster_shows_figures_derived_from_its_cards(
    client_as, exporter_cluster
):
    kpis, _ = _kpis(client_as("operator"))
    utilization = [v / 100 for v in _capture("DCGM_FI_DEV_GPU_UTIL")]
    utilization += [v / 100 for v in _capture("npu_chip_info_utilization")]
    busy = kpis["utilization_busy"]
    assert busy["value"] == pytest.approx(sum(utilization) / len(utilization))
    assert busy["display"] != "—" and busy["source"] == "derived"
    assert "derived from card samples" in busy["hint"]
    healthy = kpis["cards_healthy"]
    assert healthy["value"] == _capture("npu_chip_info_health_status").count(1.0)
    assert f"of {len(utilization)}" in healthy["hint"]
    assert kpis["hbm_live"]["value"] is not None
    assert kpis["open_alerts"]["display"] != "—"
    # What card samples cannot tell is empty and says why, not a bare dash.
    assert kpis["mfu"]["value"] is None
    assert "not reported by card exporters" in kpis["mfu"]["hint"]


@pytest.mark.django_db
def test_the_overview_curves_of_an_exporter_fed_cluster_have_points(client_as, exporter_cluster):
    _, body = _kpis(client_as("operator"))
    utilization = body["figures"]["utilization"]
    busy = [trace for trace in utilization["data"] if trace.get("y")]
    assert busy, "no utilization curve"
    assert "derived from card samples" in str(utilization["layout"]["title"])
    rows = body["tables"]["utilization"]["rows"]
    assert any(row[2] is not None for row in rows)


@pytest.mark.django_db
def test_rackless_exporter_cards_are_one_unassigned_heatmap_row(client_as, exporter_cluster):
    body = client_as("operator").get("/api/v1/dashboards/hardware/?cluster=real-a").json()
    racks = body["tables"]["racks"]
    assert racks["rows"], "the heatmap's racks table is empty"
    (row,) = racks["rows"]
    assert row[0] == "unassigned" and row[3] == 4
    heatmaps = [f for f in body["figures"].values() if f["data"] and f["data"][0].get("z")]
    assert heatmaps and all(any(v is not None for v in f["data"][0]["z"][0]) for f in heatmaps)


@pytest.mark.django_db
def test_the_memory_page_of_an_exporter_fed_cluster_draws_hbm_from_its_cards(
    client_as, exporter_cluster
):
    body = client_as("operator").get("/api/v1/dashboards/memory/?cluster=real-a&range=1h").json()
    rows = body["tables"]["hbm_over_time"]["rows"]
    live = [row for row in rows if row[1] is not None]
    assert live, "no HBM curve"


@pytest.mark.django_db
def test_the_network_page_says_exporters_give_no_link_data(client_as, exporter_cluster):
    body = client_as("operator").get("/api/v1/dashboards/network/?cluster=real-a&range=1h").json()
    assert body["notice"] == "No link data from this source."
    assert all(item["hint"] == body["notice"] for item in body["kpis"])


@pytest.mark.django_db
def test_a_node_of_an_exporter_fed_cluster_shows_its_cards_values(client_as, exporter_cluster):
    from inventory.models import Node

    node = Node.objects.get(cluster=exporter_cluster, hostname="dgx-01")
    body = client_as("operator").get(f"/api/v1/dashboards/hardware/nodes/{node.pk}/").json()
    text = str(body)
    assert body["figures"], "no charts on the node page"
    traces = [t for f in body["figures"].values() for t in f.get("data", []) if t.get("y")]
    assert traces, f"node charts are empty: {text[:300]}"


@pytest.mark.django_db
def test_pages_of_an_exporter_fed_cluster_render(client_as, exporter_cluster):
    client = client_as("operator")
    for url in ("/dashboards/", "/dashboards/hardware/", "/dashboards/memory/",
                "/dashboards/network/"):  # fmt: skip
        assert client.get(f"{url}?cluster=real-a").status_code == 200, url


@pytest.mark.django_db
def test_the_cost_of_an_exporter_fed_cluster_cites_its_cards_measured_figures(exporter_cluster):
    from datetime import UTC, datetime, timedelta

    from cost.selectors import cluster_cost

    end = datetime.now(tz=UTC)
    cost = cluster_cost(exporter_cluster, start=end - timedelta(hours=1), end=end)
    utilization = [v / 100 for v in _capture("DCGM_FI_DEV_GPU_UTIL")]
    utilization += [v / 100 for v in _capture("npu_chip_info_utilization")]
    assert cost.busy is not None
    assert cost.busy.mean == pytest.approx(sum(utilization) / len(utilization))
    # The captures hold no usable power (dcgm's one reading is DCGM's blank sentinel, the
    # npu capture has none): measured power stays missing rather than invented.
    assert cost.power is None
    assert cost.cards == len(utilization)
