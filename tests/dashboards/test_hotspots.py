"""Operators find problems fast (issue 24 part 7): top-N hottest, busiest and least healthy
cards, busiest and unhealthy links, each row linked to its page; the unhealthy count links to
its list; link utilization shows each link's own value."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from dashboards.selectors.hotspots import TOP_N, card_hotspots
from inventory.models import Accelerator, Cluster, Link, Node, Rack, Supernode
from telemetry.models import Entity
from telemetry.read import KindSnapshot
from tests.dashboards.dashboards_fixtures import twin_cluster  # noqa: F401


def column(payload: dict, table: str, name: str) -> list:
    data = payload["tables"][table]
    at = data["columns"].index(name)
    return [row[at] for row in data["rows"]]


@pytest.mark.django_db
def test_hardware_lists_the_hottest_and_busiest_cards_linked_to_their_pages(
    client_as,
    twin_cluster,  # noqa: F811
):
    payload = client_as("operator").get("/api/v1/dashboards/hardware/?cluster=twin-dash").json()
    temps = column(payload, "hottest_cards", "temperature_celsius")
    assert 0 < len(temps) <= TOP_N and temps == sorted(temps, reverse=True)
    # The list really is the top: no card is hotter than the coolest one listed.
    cards = Entity.objects.filter(cluster=twin_cluster, kind="accelerator").count()
    assert len(temps) == min(TOP_N, cards)
    busy = column(payload, "busiest_cards", "utilization_ratio")
    assert busy == sorted(busy, reverse=True)
    table = payload["tables"]["hottest_cards"]
    for label in column(payload, "hottest_cards", "card"):
        host, index = label.rsplit("/", 1)
        card = Accelerator.objects.get(node__hostname=host, index=int(index))
        assert table["links"][label] == f"/dashboards/hardware/accelerators/{card.pk}/"
    unhealthy = next(k for k in payload["kpis"] if k["key"] == "unhealthy")
    assert unhealthy["href"] == "#least-healthy"


@pytest.mark.django_db
def test_the_hardware_page_has_the_lists_the_unhealthy_count_points_to(
    client_as,
    twin_cluster,  # noqa: F811
):
    html = client_as("operator").get("/dashboards/hardware/?cluster=twin-dash").content.decode()
    assert 'id="least-healthy"' in html and 'data-table="least_healthy_cards"' in html
    assert 'data-table="hottest_cards"' in html and 'data-table="busiest_cards"' in html
    assert (
        'data-table="racks" data-link-column="rack_id" data-link-text-column="rack" data-sortable'
        in html
    )


@pytest.fixture
def small_cluster(db):
    cluster = Cluster.objects.create(name="small", kind=Cluster.Kind.UNIFIED)
    supernode = Supernode.objects.create(cluster=cluster, name="sn0")
    rack = Rack.objects.create(supernode=supernode, name="sn0/r0")
    node = Node.objects.create(cluster=cluster, rack=rack, hostname="n0")
    entities = []
    for i in range(4):
        card = Accelerator.objects.create(node=node, index=i, vendor_id=f"uuid-{i}")
        entities.append(
            Entity.objects.create(
                cluster=cluster, kind="accelerator", key=f"n0/{i}", accelerator=card, rack=rack
            )
        )
    return cluster, rack, entities


def test_least_healthy_puts_unhealthy_before_unknown_and_leaves_healthy_out(small_cluster):
    cluster, _rack, entities = small_cluster
    ids = np.array([e.pk for e in entities], np.int64)
    snap = KindSnapshot(
        ids,
        {
            "accelerator_health_status": np.array([1.0, -1.0, 0.0, 0.0]),
            "accelerator_temperature_celsius": np.array([90.0, 95.0, 60.0, 70.0]),
            "accelerator_utilization_ratio": np.array([0.1, 0.9, np.nan, 0.5]),
        },
        datetime.now(tz=UTC),
    )
    spots = card_hotspots(cluster, snap)
    assert [r.card for r in spots.least_healthy] == ["n0/3", "n0/2", "n0/1"]
    assert [r.health for r in spots.least_healthy] == ["unhealthy", "unhealthy", "unknown"]
    assert spots.least_healthy_total == 3
    assert [r.card for r in spots.hottest] == ["n0/1", "n0/0", "n0/3", "n0/2"]
    assert [r.card for r in spots.busiest] == ["n0/1", "n0/3", "n0/0"]  # no value: not listed
    assert all(r.accelerator_id for r in spots.hottest)


def test_equal_temperatures_and_utilizations_are_ranked_by_the_other_figures(small_cluster):
    # The twin's cards often read alike (74 °C, 100%): a top-N of equals ranks nothing.
    cluster, _rack, entities = small_cluster
    ids = np.array([e.pk for e in entities], np.int64)
    snap = KindSnapshot(
        ids,
        {
            "accelerator_temperature_celsius": np.array([74.0, 74.0, 74.0, 74.0]),
            "accelerator_utilization_ratio": np.array([1.0, 1.0, 1.0, 0.9]),
            "accelerator_power_watts": np.array([500.0, np.nan, 650.0, 700.0]),
        },
        datetime.now(tz=UTC),
    )
    spots = card_hotspots(cluster, snap)
    # Hottest: all 74 °C, so by utilization, then power (no power figure last).
    assert [r.card for r in spots.hottest] == ["n0/2", "n0/0", "n0/1", "n0/3"]
    # Busiest: three at 100%, by power (missing last); the 90% card after them.
    assert [r.card for r in spots.busiest] == ["n0/2", "n0/0", "n0/1", "n0/3"]


@pytest.mark.django_db
def test_network_lists_unhealthy_and_busiest_links_linked_to_their_rack(client_as, small_cluster):
    cluster, rack, _ = small_cluster
    for i, status in enumerate(("up", "down", "degraded", "up")):
        link = Link.objects.create(cluster=cluster, key=f"l{i}", kind="inter_rack",
                                   endpoint_a="a", endpoint_b="b", status=status,
                                   capacity_bytes_per_s=1e10)  # fmt: skip
        Entity.objects.create(cluster=cluster, kind="link", key=f"l{i}", rack=rack, link=link)
    payload = client_as("operator").get("/api/v1/dashboards/network/?cluster=small").json()
    assert column(payload, "unhealthy_links", "link") == ["l1", "l2"]
    assert column(payload, "unhealthy_links", "status") == ["down", "degraded"]
    links = payload["tables"]["unhealthy_links"]["links"]
    assert links == {"l1": f"/dashboards/hardware/racks/{rack.pk}/", "l2": links["l2"]}
    down = next(k for k in payload["kpis"] if k["key"] == "links_down")
    assert down["href"] == "#unhealthy-links"


@pytest.mark.django_db
def test_busiest_links_show_each_link_s_own_value(
    client_as,
    twin_cluster,  # noqa: F811
):
    """The flat 27.2% of the demo is the twin's model (one load per rack, equal for racks one
    job holds), not the page: the values listed are the links' own, sorted."""
    payload = client_as("operator").get("/api/v1/dashboards/network/?cluster=twin-dash").json()
    util = column(payload, "busiest_links", "utilization_ratio")
    assert util == sorted(util, reverse=True) and len(util) <= 20
    assert payload["utilization_distinct"] >= 1
