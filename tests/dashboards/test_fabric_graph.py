"""The network page's fabric graph: a supernode's racks and switches as nodes, its links as
edges with their newest state, laid out deterministically; the supernode with problems first."""

# ruff: noqa: F811 (pytest fixtures imported from dashboards_fixtures are used as arguments)

from __future__ import annotations

import json
import math

import pytest

from dashboards.payloads.fabric import fabric_figure
from dashboards.selectors import fabric as fabric_selector
from dashboards.selectors.fabric import UnknownSupernode, fabric_graph
from inventory.models import Cluster, Link, Rack, Supernode
from telemetry.models import Entity
from tests.dashboards.dashboards_fixtures import twin_cluster  # noqa: F401
from tests.dashboards.test_network_links import _snapshot

GBPS = 50e9


def _fabric(down: str | None = "sn0/r2/up0", degraded: str | None = "sn0/r1/up1") -> Cluster:
    """sn0: four racks with two uplinks each to its spine, an in-rack link in r0 and a link
    to sn1's spine; sn1: one rack; sn2: a rack and no link. Every link is up unless named."""
    cluster = Cluster.objects.create(name="fab", kind=Cluster.Kind.UNIFIED)
    for sn, racks in (("sn0", 4), ("sn1", 1), ("sn2", 1)):
        supernode = Supernode.objects.create(cluster=cluster, name=sn)
        for r in range(racks):
            Rack.objects.create(supernode=supernode, name=f"{sn}/r{r}")

    def link(key: str, kind: str, a: str, b: str) -> None:
        status = "down" if key == down else "degraded" if key == degraded else "up"
        Link.objects.create(
            cluster=cluster,
            key=key,
            kind=kind,
            endpoint_a=a,
            endpoint_b=b,
            capacity_bytes_per_s=GBPS,
            status=status,
        )

    for sn, racks in (("sn0", 4), ("sn1", 1)):
        for r in range(racks):
            for u in range(2):
                link(f"{sn}/r{r}/up{u}", "inter_rack", f"{sn}/r{r}", f"{sn}/spine")
    link("sn0/r0/l0", "in_rack", "sn0/r0/n0/c0", "sn0/r0/n1/c0")
    link("sn0/core", "inter_supernode", "sn0/spine", "sn1/spine")
    return cluster


@pytest.mark.django_db
def test_racks_switches_and_outside_ends_become_nodes_and_links_become_edges():
    graph = fabric_graph(_fabric(), "sn0")

    roles = {n.key: n.role for n in graph.nodes}
    assert roles == {
        "sn0/r0": "rack",
        "sn0/r1": "rack",
        "sn0/r2": "rack",
        "sn0/r3": "rack",
        "sn0/spine": "switch",
        "sn1/spine": "external",
    }
    at = {n.key: (n.x, n.y) for n in graph.nodes}
    # Racks on the unit circle, the first at the top, clockwise; the lone spine in the centre;
    assert at["sn0/r0"] == (0.0, 1.0) and at["sn0/r1"] == (1.0, 0.0)
    assert at["sn0/spine"] == (0.0, 0.0)
    # the other supernode's spine on the outer ring, between two racks (r0 and r1), so the
    # line to it crosses no rack.
    assert math.hypot(*at["sn1/spine"]) == pytest.approx(fabric_selector.OUTER_RADIUS, abs=1e-3)
    assert math.degrees(math.atan2(at["sn1/spine"][1], at["sn1/spine"][0])) == pytest.approx(45)
    edges = {e.key: e for e in graph.edges}
    assert set(edges) == {f"sn0/r{r}/up{u}" for r in range(4) for u in range(2)} | {
        "sn0/r0/l0",
        "sn0/core",
    }
    # Every edge runs from one of its ends to the other.
    up = edges["sn0/r3/up0"]
    assert (up.xs[0], up.ys[0]) == at["sn0/r3"] and (up.xs[-1], up.ys[-1]) == at["sn0/spine"]
    # The in-rack link is a loop by its rack.
    loop = edges["sn0/r0/l0"]
    assert (loop.xs[0], loop.ys[0]) == pytest.approx((loop.xs[-1], loop.ys[-1]), abs=1e-3)
    assert loop.kind == "in_rack"


@pytest.mark.django_db
def test_down_and_degraded_links_carry_their_state_and_their_siblings_know():
    graph = fabric_graph(_fabric(), "sn0")
    edges = {e.key: e for e in graph.edges}

    assert edges["sn0/r2/up0"].status == "down"
    assert edges["sn0/r1/up1"].status == "degraded"
    assert graph.status_counts == {"up": 8, "down": 1, "degraded": 1}
    # The live uplink beside the down one takes its traffic; the down one is not told so.
    assert edges["sn0/r2/up1"].parallel_not_up == 1
    assert edges["sn0/r2/up0"].parallel_not_up == 0
    assert edges["sn0/r3/up1"].parallel_not_up == 0
    # Parallel uplinks fan out: the two curves of a rack are different lines.
    assert edges["sn0/r2/up0"].xs != edges["sn0/r2/up1"].xs
    racks = {n.key: n for n in graph.nodes}
    assert (racks["sn0/r2"].links, racks["sn0/r2"].not_up) == (2, 1)


@pytest.mark.django_db
def test_the_default_supernode_is_the_one_with_the_most_links_not_up():
    cluster = _fabric(down="sn1/r0/up0", degraded="sn1/r0/up1")
    graph = fabric_graph(cluster)

    assert graph.supernode.name == "sn1"
    assert [(c.name, c.links, c.not_up) for c in graph.choices] == [
        ("sn0", 10, 0),
        ("sn1", 3, 2),  # its two uplinks and the inter-supernode link to sn0
        ("sn2", 0, 0),
    ]
    # With every link up, the first supernode by name.
    Link.objects.filter(cluster=cluster).update(status="up")
    assert fabric_graph(cluster).supernode.name == "sn0"


@pytest.mark.django_db
def test_the_layout_is_the_same_on_every_read():
    cluster = _fabric()
    assert fabric_figure(fabric_graph(cluster)) == fabric_figure(fabric_graph(cluster))


@pytest.mark.django_db
def test_an_empty_supernode_has_its_racks_and_no_edges_and_an_unknown_one_is_refused():
    cluster = _fabric()
    graph = fabric_graph(cluster, "sn2")
    assert graph.edges == [] and [n.key for n in graph.nodes] == ["sn2/r0"]
    with pytest.raises(UnknownSupernode):
        fabric_graph(cluster, "sn9")


@pytest.mark.django_db
def test_telemetry_state_wins_and_a_reroute_is_drawn_as_its_own_line(twin_cluster, monkeypatch):
    links = list(Link.objects.filter(cluster=twin_cluster).order_by("key"))
    entity_of = dict(Entity.objects.filter(link__in=links).values_list("link_id", "pk"))
    rerouting, down = links[0], links[1]
    rows = {entity_of[link.pk]: (1.0, 0.3, 0.0) for link in links}
    rows[entity_of[rerouting.pk]] = (0.0, 0.0, 1.0)
    rows[entity_of[down.pk]] = (0.0, 0.0, 0.0)
    rows[entity_of[links[2].pk]] = (1.0, 0.95, 0.0)
    rows[entity_of[links[3].pk]] = (1.0, 0.2, 1.0)  # still reporting up while rerouting
    monkeypatch.setattr(fabric_selector, "latest_snapshot", lambda *a: _snapshot(rows))

    graph = fabric_graph(twin_cluster)
    edges = {e.key: e for e in graph.edges}
    assert graph.supernode.name == "sn0" and len(edges) == len(links)
    assert graph.rerouting_recorded and graph.utilization_measured
    assert (edges[rerouting.key].status, edges[rerouting.key].rerouting) == ("down", True)
    assert (edges[down.key].status, edges[down.key].rerouting) == ("down", False)
    assert edges[links[2].key].utilization == pytest.approx(0.95)
    assert (edges[links[3].key].status, edges[links[3].key].rerouting) == ("up", True)
    assert graph.status_counts["rerouting"] == 2 and graph.status_counts["down"] == 2
    assert [c.not_up for c in graph.choices] == [3]  # both reroutes and the plain failure
    # The twin's uplinks run from a rack to the supernode's spine, the hub of the star.
    assert {n.key: (n.x, n.y) for n in graph.nodes}["sn0/spine"] == (0.0, 0.0)

    traces = {t["name"]: t for t in fabric_figure(graph)["data"] if t["mode"] == "lines"}
    rerouted = traces["traffic being rerouted (self-healing)"]
    assert rerouted["line"]["dash"] == "dashdot"
    assert {t.split("<br>")[0] for t in rerouted["text"] if t} == {
        f"Link {links[0].key}",
        f"Link {links[3].key}",
    }
    assert traces["down"]["line"]["dash"] == "dot"
    assert (
        traces["up, load at least 90%"]["line"]["width"]
        > traces["up, load under 50%"]["line"]["width"]
    )


@pytest.mark.django_db
def test_the_network_page_draws_the_graph_with_a_picker_and_a_legend(client_as):
    _fabric()
    response = client_as("operator").get("/dashboards/network/?cluster=fab&range=1h")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'src="/static/js/fabric.js"' in html and 'data-fabric="fabric-figure"' in html
    assert '<option value="sn0" selected>sn0 (2 of 10 links not up)</option>' in html
    assert "degraded links are orange and dashed" in html
    assert "does not record reroutes" in html  # no telemetry here

    figure = json.loads(json.dumps(response.context["fabric_figure"]))
    lines = {t["name"]: t for t in figure["data"] if t["mode"] == "lines"}
    assert lines["down"]["line"] == {"color": "#D55E00", "width": 2.5, "dash": "dot"}
    assert lines["degraded"]["line"]["dash"] == "dash"
    hover = next(t for t in lines["down"]["text"] if t)
    assert hover.startswith("Link sn0/r2/up0<br>sn0/r2 ↔ sn0/spine<br>inter-rack · down")
    assert "capacity 50 GB/s" in hover
    assert figure["layout"]["title"]["text"] == "Fabric of supernode sn0"
    # Range presets keep the picked supernode.
    picked = client_as("operator").get("/dashboards/network/?cluster=fab&supernode=sn1")
    assert "supernode=sn1" in picked.content.decode()


@pytest.mark.django_db
def test_the_page_says_when_a_supernode_has_no_links_and_names_an_unknown_one(client_as):
    _fabric()
    client = client_as("operator")
    empty = client.get("/dashboards/network/?cluster=fab&supernode=sn2").content.decode()
    assert "Supernode sn2 has no links in the inventory" in empty
    assert 'id="fabric-figure"' not in empty

    unknown = client.get("/dashboards/network/?cluster=fab&supernode=%3Cb%3Esn9")
    assert unknown.status_code == 400
    assert "Cluster fab has no supernode named “&lt;b&gt;sn9”." in unknown.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["customer", "other_customer"])
def test_customers_never_see_the_fabric(client_as, role):
    _fabric()
    assert client_as(role).get("/dashboards/network/?cluster=fab&supernode=sn0").status_code == 403


@pytest.mark.django_db
def test_the_graph_costs_the_same_few_queries_however_many_links():
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    cluster = _fabric()
    fabric_graph(cluster)  # the first read warms the process's caches (metric ids and such)
    with CaptureQueriesContext(connection) as few:
        fabric_graph(cluster)
    Link.objects.bulk_create(
        Link(
            cluster=cluster,
            key=f"sn0/r3/extra{i}",
            kind="inter_rack",
            endpoint_a="sn0/r3",
            endpoint_b="sn0/spine",
            capacity_bytes_per_s=GBPS,
        )
        for i in range(200)
    )
    with CaptureQueriesContext(connection) as many:
        graph = fabric_graph(cluster)
    assert len(graph.edges) == 210
    assert len(many) == len(few) <= 10
