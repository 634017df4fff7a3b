"""The entity service fills in an entity's path and tenant from the inventory, once."""

from __future__ import annotations

import pytest

from inventory.models import Accelerator, Node, Rack, Supernode
from telemetry.catalogue.entities import entities_save, entity_build, workload_entity_ensure
from telemetry.models import Entity, EntityKind
from tests.factories import ClusterFactory, EntityFactory, WorkloadFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def card(cluster) -> Accelerator:
    supernode = Supernode.objects.create(cluster=cluster, name="sn0")
    rack = Rack.objects.create(supernode=supernode, name="sn0/r0")
    node = Node.objects.create(cluster=cluster, rack=rack, hostname="sn0/r0/n0")
    return Accelerator.objects.create(node=node, index=3)


def test_a_card_entity_carries_its_node_rack_and_supernode(card):
    entity = EntityFactory(cluster=card.node.cluster, key="sn0/r0/n0/c3", accelerator=card)
    entity.refresh_from_db()
    assert (entity.node, entity.rack, entity.supernode) == (
        card.node,
        card.node.rack,
        card.node.rack.supernode,
    )


def test_a_workload_entity_belongs_to_the_workload_s_tenant(tenants):
    workload = WorkloadFactory(tenant=tenants["panda"], name="asr")
    entity = workload_entity_ensure(workload)
    assert (entity.tenant_id, entity.workload_id, entity.kind) == (
        tenants["panda"].pk,
        workload.pk,
        EntityKind.WORKLOAD,
    )
    assert workload_entity_ensure(workload).pk == entity.pk


def test_saving_an_entity_twice_keeps_one_row_and_its_first_path(card):
    cluster = card.node.cluster
    entities_save([entity_build(cluster=cluster, kind="accelerator", key="k", accelerator=card)])
    entities_save([entity_build(cluster=cluster, kind="accelerator", key="k")])
    (only,) = Entity.objects.filter(cluster=cluster, key="k")
    assert only.accelerator_id == card.pk


def test_a_plain_entity_has_no_path():
    entity = EntityFactory(cluster=ClusterFactory(), kind=EntityKind.CLUSTER, key="cluster")
    assert (entity.node_id, entity.rack_id, entity.supernode_id, entity.tenant_id) == (
        None,
        None,
        None,
        None,
    )
