"""The one inventory service that creates supernodes, racks, nodes and cards for everyone."""

from __future__ import annotations

import math

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from inventory.models import Accelerator, Node, Rack, Supernode
from inventory.services import (
    DeviceSpec,
    Placement,
    accelerators_ensure,
    nodes_ensure,
    racks_ensure,
)
from tests.factories import ClusterFactory

pytestmark = pytest.mark.django_db


def fleet(hosts: int, cards: int) -> list[DeviceSpec]:
    return [
        DeviceSpec(host=f"h{h:04d}", index=c, vendor_id=f"GPU-{h:04d}-{c}")
        for h in range(hosts)
        for c in range(cards)
    ]


def test_ensuring_twice_creates_each_node_and_card_once():
    cluster = ClusterFactory()
    devices = fleet(3, 8)
    for _ in range(2):
        nodes = nodes_ensure(cluster=cluster, hosts={d.host for d in devices})
        cards = accelerators_ensure(cluster=cluster, devices=devices, nodes=nodes)
    assert Node.objects.filter(cluster=cluster).count() == 3
    assert Accelerator.objects.filter(node__cluster=cluster).count() == 24
    assert set(cards) == {(d.host, d.vendor_id) for d in devices}


def test_a_fleet_of_ten_thousand_cards_costs_a_few_queries_not_one_per_card():
    cluster = ClusterFactory()
    devices = fleet(1280, 8)
    with CaptureQueriesContext(connection) as queries:
        nodes = nodes_ensure(cluster=cluster, hosts={d.host for d in devices})
        cards = accelerators_ensure(cluster=cluster, devices=devices, nodes=nodes)
    assert len(cards) == 10_240
    assert len(queries) < 40 + _forced_insert_batches({Accelerator: 10_240, Node: 1_280})


def _forced_insert_batches(rows: dict[type, int]) -> int:
    """Statements a backend's parameter limit adds to bulk inserts: SQLite binds at most 999
    parameters per statement, so its inserts go ~80 cards at a time — per batch, still not
    per card. PostgreSQL inserts each list in one statement (0 extra)."""
    if connection.vendor != "sqlite":
        return 0
    extra = 0
    for model, count in rows.items():
        fields = [f for f in model._meta.concrete_fields if not f.primary_key]
        extra += math.ceil(count / connection.ops.bulk_batch_size(fields, range(count)))
    return extra


def statements(queries) -> list[str]:
    return [q["sql"] for q in queries if "SAVEPOINT" not in q["sql"]]


def test_known_placed_nodes_are_found_in_one_query_unplaced_ones_ask_the_mapping_once():
    cluster = ClusterFactory()
    nodes_ensure(cluster=cluster, hosts=(), placements={"a": Placement("s", "r")})
    nodes_ensure(cluster=cluster, hosts={"b"})
    with CaptureQueriesContext(connection) as queries:
        nodes = nodes_ensure(cluster=cluster, hosts={"a"}, registered_by_exporter=True)
    assert set(nodes) == {"a"}
    assert len(statements(queries)) == 1
    with CaptureQueriesContext(connection) as queries:
        nodes_ensure(cluster=cluster, hosts={"a", "b"}, registered_by_exporter=True)
    assert len(statements(queries)) == 2


def test_a_placement_creates_its_rack_and_supernode_and_moves_an_existing_node():
    cluster = ClusterFactory()
    nodes_ensure(cluster=cluster, hosts={"gpu-01"}, registered_by_exporter=True)
    nodes = nodes_ensure(cluster=cluster, hosts=(), placements={"gpu-01": Placement("sn1", "r07")})
    node = nodes["gpu-01"]
    assert (node.rack.supernode.name, node.rack.name) == ("sn1", "r07")
    assert node.registered_by_exporter  # placing a node does not change who found it
    assert Supernode.objects.filter(cluster=cluster).count() == 1


def test_a_host_without_placement_keeps_its_rack():
    cluster = ClusterFactory()
    nodes_ensure(cluster=cluster, hosts=(), placements={"gpu-01": Placement("sn1", "r07")})
    node = nodes_ensure(cluster=cluster, hosts={"gpu-01"})["gpu-01"]
    assert node.rack.name == "r07"


def test_racks_of_the_same_name_in_two_supernodes_are_two_racks():
    cluster = ClusterFactory()
    racks = racks_ensure(cluster=cluster, placements=[Placement("a", "r1"), Placement("b", "r1")])
    assert racks[Placement("a", "r1")] != racks[Placement("b", "r1")]
    assert Rack.objects.filter(supernode__cluster=cluster).count() == 2
