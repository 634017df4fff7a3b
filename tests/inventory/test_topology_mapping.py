"""A real cluster's label mapping puts exporter-registered nodes (and their entities) in racks."""

from __future__ import annotations

import time

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from inventory.models import Node, TopologyMapping
from inventory.services import nodes_ensure, topology_mapping_apply
from inventory.services.topology import Placement
from telemetry.models import Entity, EntityKind
from telemetry.receivers.text import ingest_prometheus_text
from tests.factories import ClusterFactory

pytestmark = pytest.mark.django_db

# dcgm-exporter output as Prometheus forwards it after relabelling the Kubernetes node's
# topology label onto the target (``rack``); two hosts, one GPU each.
DCGM_WITH_RACK = """# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-aaa",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-01",rack="r07",row="b"} 87
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-bbb",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-02",rack="r08",row="b"} 12
"""
NPU = """# TYPE npu_chip_info_utilization gauge
npu_chip_info_utilization{id="0",model_name="Ascend910B",vdie_id="VD-0"} 55 {ts}
# TYPE machine_npu_nums gauge
machine_npu_nums 8 {ts}
"""


def push(cluster, text: str, *, node: str | None = None, source: str = "dcgm") -> dict:
    return ingest_prometheus_text(
        text=text, cluster_name=cluster.name, node=node, source=source, scrape_time=time.time()
    )


def npu_text() -> str:
    return NPU.replace("{ts}", str(int(time.time() * 1000)))


def test_a_rack_label_puts_exporter_registered_nodes_and_their_entities_in_racks():
    cluster = ClusterFactory()
    TopologyMapping.objects.create(cluster=cluster, rack_label="rack", supernode_label="row")
    push(cluster, DCGM_WITH_RACK)
    node = Node.objects.select_related("rack__supernode").get(cluster=cluster, hostname="dgx-01")
    assert (node.rack.supernode.name, node.rack.name) == ("b", "r07")
    card = Entity.objects.get(cluster=cluster, accelerator__vendor_id="GPU-aaa")
    # The heatmaps group by the entity's rack: it is the node's.
    assert (card.rack_id, card.supernode_id) == (node.rack_id, node.rack.supernode_id)
    assert Node.objects.get(cluster=cluster, hostname="dgx-02").rack.name == "r08"


def test_a_hostname_pattern_places_nodes_without_a_rack_label():
    cluster = ClusterFactory()
    TopologyMapping.objects.create(
        cluster=cluster, hostname_pattern=r"^(?P<supernode>sn\d+)-(?P<rack>r\d+)-n\d+$"
    )
    push(cluster, npu_text(), node="sn2-r05-n03", source="npu")
    node = Node.objects.select_related("rack__supernode").get(hostname="sn2-r05-n03")
    assert (node.rack.supernode.name, node.rack.name) == ("sn2", "r05")
    entity = Entity.objects.get(cluster=cluster, kind=EntityKind.NODE, key="sn2-r05-n03")
    assert entity.rack_id == node.rack_id


def test_without_a_mapping_exporter_nodes_have_no_rack_as_before():
    cluster = ClusterFactory()
    push(cluster, DCGM_WITH_RACK)
    assert not Node.objects.filter(cluster=cluster, rack__isnull=False).exists()


def test_a_mapping_added_later_places_known_nodes_and_moves_their_entities():
    cluster = ClusterFactory()
    push(cluster, npu_text(), node="sn1-r02-n01", source="npu")
    assert Entity.objects.get(cluster=cluster, accelerator__vendor_id="VD-0").rack_id is None
    TopologyMapping.objects.create(
        cluster=cluster, hostname_pattern=r"^(?P<supernode>sn\d+)-(?P<rack>r\d+)-"
    )
    assert topology_mapping_apply(cluster=cluster) == 1
    node = Node.objects.get(hostname="sn1-r02-n01")
    assert node.rack.name == "r02"
    assert set(Entity.objects.filter(cluster=cluster).values_list("rack_id", flat=True)) == {
        node.rack_id
    }


def test_a_corrected_pattern_moves_what_the_old_one_placed_but_not_an_imports_nodes():
    cluster = ClusterFactory()
    nodes_ensure(cluster=cluster, hosts={"sn1-r02-n01", "sn1-r02-n02"}, registered_by_exporter=True)
    nodes_ensure(
        cluster=cluster, hosts={"sn1-r02-n03"}, placements={"sn1-r02-n03": Placement("sn9", "r42")}
    )
    wrong = TopologyMapping.objects.create(cluster=cluster, hostname_pattern=r"^(?P<rack>sn\d+)-")
    assert topology_mapping_apply(cluster=cluster) == 2  # the two unplaced nodes
    assert Node.objects.get(hostname="sn1-r02-n01").rack.name == "sn1"
    previous = TopologyMapping.objects.get(pk=wrong.pk)
    wrong.hostname_pattern = r"^(?P<supernode>sn\d+)-(?P<rack>r\d+)-"
    wrong.save()
    assert topology_mapping_apply(cluster=cluster, previous=previous) == 2
    for host in ("sn1-r02-n01", "sn1-r02-n02"):
        node = Node.objects.select_related("rack__supernode").get(hostname=host)
        assert (node.rack.supernode.name, node.rack.name) == ("sn1", "r02")
    # The import's word stands: its node stays where it put it.
    assert Node.objects.get(hostname="sn1-r02-n03").rack.name == "r42"
    assert topology_mapping_apply(cluster=cluster, previous=wrong) == 0  # nothing left to do


def test_a_rack_label_mapping_moves_no_node_at_save():
    cluster = ClusterFactory()
    nodes_ensure(cluster=cluster, hosts={"dgx-01"}, registered_by_exporter=True)
    TopologyMapping.objects.create(cluster=cluster, rack_label="rack")
    assert topology_mapping_apply(cluster=cluster) == 0
    assert Node.objects.get(hostname="dgx-01").rack is None


def test_a_node_already_in_a_rack_is_not_moved_by_the_label():
    cluster = ClusterFactory()
    TopologyMapping.objects.create(cluster=cluster, rack_label="rack")
    push(cluster, DCGM_WITH_RACK)
    push(cluster, DCGM_WITH_RACK.replace('rack="r07"', 'rack="r99"'))
    assert Node.objects.get(cluster=cluster, hostname="dgx-01").rack.name == "r07"


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({}, "rack_label", "Name a rack label or a hostname pattern"),
        ({"rack_label": "rack-name"}, "rack_label", "not a Prometheus label name"),
        ({"hostname_pattern": "^(?P<rack>r[0-9+$"}, "hostname_pattern", "Not a regular expression"),
        ({"hostname_pattern": r"^r(\d+)"}, "hostname_pattern", "named group rack"),
        ({"hostname_pattern": r"^(?P<rack>r\d)\1"}, "hostname_pattern", "RE2 syntax"),
        ({"hostname_pattern": r"^(?=sn)(?P<rack>r\d)"}, "hostname_pattern", "look-arounds"),
        ({"hostname_pattern": "^x", "supernode_label": "row"}, "supernode_label", "rack label"),
    ],
)
def test_a_bad_mapping_is_refused_naming_the_field(fields, field, message):
    mapping = TopologyMapping(cluster=ClusterFactory(), **fields)
    with pytest.raises(ValidationError) as caught:
        mapping.full_clean()
    assert message in " ".join(caught.value.message_dict[field])


def test_the_database_refuses_a_mapping_that_names_no_source():
    with pytest.raises(IntegrityError), transaction.atomic():
        TopologyMapping.objects.create(cluster=ClusterFactory())


def test_a_pattern_with_nested_quantifiers_matches_a_long_hostname_in_linear_time():
    # Python's backtracking engine took 30.5 s (and a web worker) on this pattern and one
    # 30-character hostname; RE2 answers at once, whatever the nesting.
    mapping = TopologyMapping(cluster=ClusterFactory(), hostname_pattern="^(?P<rack>(a+)+)$")
    mapping.full_clean()
    started = time.monotonic()
    for length in (30, 3_000):
        assert mapping.place("a" * length + "!") is None
    assert time.monotonic() - started < 5  # backtracking would need ~2**30 steps
    assert mapping.place("a" * 20) == ("default", "a" * 20)
