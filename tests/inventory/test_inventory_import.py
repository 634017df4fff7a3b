"""The inventory import: one service behind the page, the API and the command."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from inventory.models import Accelerator, HardwareModel, Node, Rack, Supernode
from inventory.services import InventoryImportError, inventory_import, nodes_ensure
from inventory.services.topology import DeviceSpec, accelerators_ensure
from telemetry.catalogue.entities import entities_save, entity_build
from telemetry.models import Entity, EntityKind
from tests.factories import ClusterFactory

pytestmark = pytest.mark.django_db

CSV = """hostname,rack,supernode,card_model,card_count
gpu-a01,r01,sn1,h100-test,8
gpu-a02,r01,sn1,h100-test,8
gpu-b01,r02,,,
"""
YAML = """nodes:
  - hostname: npu-b01
    rack: r07
    supernode: sn2
    card_model: Ascend Test
    card_count: 16
  - hostname: npu-b02
    rack: r07
    supernode: sn2
"""


@pytest.fixture
def models() -> dict[str, HardwareModel]:
    figures = {"hbm_bytes": 1, "hbm_bandwidth_bytes_per_s": 1, "peak_flops": 1}
    return {
        slug: HardwareModel.objects.create(
            slug=slug, name=name, vendor="x", confidence="high", **figures
        )
        for slug, name in (("h100-test", "H100 Test"), ("ascend-test", "Ascend Test"))
    }


def snapshot(cluster) -> list[tuple]:
    return list(
        Node.objects.filter(cluster=cluster)
        .order_by("hostname")
        .values_list(
            "hostname",
            "rack__name",
            "rack__supernode__name",
            "hardware_model__slug",
            "cards_expected",
        )
    )


def test_a_csv_import_places_nodes_and_counts_what_it_created(models):
    cluster = ClusterFactory()
    report = inventory_import(cluster=cluster, text=CSV)
    assert report.as_dict()["nodes"] == {"created": 3, "updated": 0, "unchanged": 0}
    assert (report.racks_created, report.supernodes_created) == (2, 2)
    assert snapshot(cluster) == [
        ("gpu-a01", "r01", "sn1", "h100-test", 8),
        ("gpu-a02", "r01", "sn1", "h100-test", 8),
        ("gpu-b01", "r02", "default", None, None),
    ]


def test_importing_the_same_file_again_changes_nothing(models):
    cluster = ClusterFactory()
    inventory_import(cluster=cluster, text=CSV)
    before = snapshot(cluster)
    report = inventory_import(cluster=cluster, text=CSV)
    assert report.as_dict()["nodes"] == {"created": 0, "updated": 0, "unchanged": 3}
    assert (report.racks_created, report.supernodes_created) == (0, 0)
    assert snapshot(cluster) == before
    assert Rack.objects.filter(supernode__cluster=cluster).count() == 2


def test_a_yaml_import_takes_models_by_name_and_counts_updates(models):
    cluster = ClusterFactory()
    nodes_ensure(cluster=cluster, hosts={"npu-b01"}, registered_by_exporter=True)
    report = inventory_import(cluster=cluster, text=YAML)
    assert report.as_dict()["nodes"] == {"created": 1, "updated": 1, "unchanged": 0}
    assert snapshot(cluster)[0] == ("npu-b01", "r07", "sn2", "ascend-test", 16)


def test_every_problem_is_reported_with_its_line_and_nothing_is_written(models):
    cluster = ClusterFactory()
    bad = """hostname,rack,supernode,card_model,card_count
gpu-a01,r01,sn1,h100-test,8
,r01,sn1,,
gpu-a01,r02,,,
gpu-a03,,sn9,b300,many
"""
    with pytest.raises(InventoryImportError) as caught:
        inventory_import(cluster=cluster, text=bad)
    found = [(p.line, p.field) for p in caught.value.problems]
    assert found == [
        (3, "hostname"),
        (4, "hostname"),
        (5, "card_count"),
        (5, "card_model"),
        (5, "supernode"),
    ]
    unknown = next(p for p in caught.value.problems if p.field == "card_model")
    assert "b300" in unknown.message
    assert all(
        slug in unknown.message for slug in HardwareModel.objects.values_list("slug", flat=True)
    )
    assert "line 2" in next(p.message for p in caught.value.problems if p.line == 4)
    assert not Node.objects.filter(cluster=cluster).exists()
    assert not Supernode.objects.filter(cluster=cluster).exists()


def test_yaml_problems_name_the_line_of_their_node(models):
    cluster = ClusterFactory()
    with pytest.raises(InventoryImportError) as caught:
        inventory_import(cluster=cluster, text=YAML.replace("Ascend Test", "Ascend 999"))
    assert [(p.line, p.field) for p in caught.value.problems] == [(2, "card_model")]


def test_an_unknown_column_is_refused_on_the_header_line(models):
    with pytest.raises(InventoryImportError) as caught:
        inventory_import(cluster=ClusterFactory(), text="hostname,row\nx,1\n")
    assert [(p.line, p.field) for p in caught.value.problems] == [(1, "row")]


def test_a_dry_run_counts_but_writes_nothing(models):
    cluster = ClusterFactory()
    report = inventory_import(cluster=cluster, text=CSV, dry_run=True)
    assert report.dry_run and report.created == 3
    assert not Node.objects.filter(cluster=cluster).exists()


def test_moving_an_exporter_node_moves_its_entities_and_cards_take_the_model(models):
    cluster = ClusterFactory()
    nodes = nodes_ensure(cluster=cluster, hosts={"gpu-a01"}, registered_by_exporter=True)
    cards = accelerators_ensure(
        cluster=cluster, devices=[DeviceSpec("gpu-a01", 0, "GPU-1")], nodes=nodes
    )
    entities_save(
        [
            entity_build(
                cluster=cluster, kind=EntityKind.NODE, key="gpu-a01", node=nodes["gpu-a01"]
            ),
            entity_build(
                cluster=cluster,
                kind=EntityKind.ACCELERATOR,
                key="GPU-1",
                accelerator=cards[("gpu-a01", "GPU-1")],
            ),
        ]
    )
    report = inventory_import(cluster=cluster, text=CSV)
    rack = Rack.objects.get(supernode__cluster=cluster, name="r01")
    assert set(Entity.objects.filter(cluster=cluster).values_list("rack_id", flat=True)) == {
        rack.pk
    }
    assert Accelerator.objects.get(vendor_id="GPU-1").hardware_model.slug == "h100-test"
    assert report.cards_updated == 1


def test_the_command_imports_a_file_and_reports_counts(models, tmp_path):
    cluster = ClusterFactory()
    path = tmp_path / "inventory.csv"
    path.write_text(CSV)
    out = StringIO()
    call_command("inventory_import", str(path), cluster=cluster.name, dry_run=True, stdout=out)
    assert json.loads(out.getvalue())["nodes"]["created"] == 3
    assert not Node.objects.filter(cluster=cluster).exists()
    call_command("inventory_import", str(path), cluster=cluster.name, stdout=StringIO())
    assert Node.objects.filter(cluster=cluster).count() == 3


def test_the_command_lists_every_problem_and_fails(models, tmp_path):
    cluster = ClusterFactory()
    path = tmp_path / "inventory.yaml"
    path.write_text("- hostname: a\n  card_model: nope\n- rack: r1\n")
    with pytest.raises(CommandError) as caught:
        call_command("inventory_import", str(path), cluster=cluster.name)
    assert "line 1, card_model" in str(caught.value) and "line 3, hostname" in str(caught.value)
