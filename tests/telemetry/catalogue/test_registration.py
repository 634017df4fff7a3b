"""Registering cards a second time: the unchanged fleet's fast answer, and what still takes the
full path (a new card, a moved chip)."""

from __future__ import annotations

import pytest

from inventory.models import Accelerator, AcceleratorMove
from telemetry.catalogue.registry import DeviceRef, devices_register

pytestmark = pytest.mark.django_db


def _fleet(nodes: int = 4, per_node: int = 8, *, moved: dict[str, str] | None = None) -> list:
    moved = moved or {}
    refs = []
    for n in range(nodes):
        for i in range(per_node):
            chip = f"GPU-reg-{n}-{i}"
            refs.append(DeviceRef(moved.get(chip, f"reg-n{n}"), i, chip, "NVIDIA H100 80GB HBM3"))
    return refs


def test_an_unchanged_fleet_registers_to_the_same_ids_in_a_few_queries(
    cluster, django_assert_max_num_queries
):
    first = devices_register(cluster, _fleet())
    with django_assert_max_num_queries(2):
        again = devices_register(cluster, _fleet())
    assert again == first
    assert Accelerator.objects.filter(node__cluster=cluster).count() == 32


def test_a_new_card_beside_known_ones_is_registered(cluster):
    first = devices_register(cluster, _fleet())
    again = devices_register(cluster, _fleet(per_node=9))
    assert len(again) == 36
    assert {k: again[k] for k in first} == first
    assert Accelerator.objects.filter(node__cluster=cluster).count() == 36


def test_a_chip_that_moved_host_is_moved_and_recorded_on_a_later_registration(cluster):
    first = devices_register(cluster, _fleet())
    again = devices_register(cluster, _fleet(moved={"GPU-reg-0-3": "reg-n3"}))
    assert again == first  # same entity: the chip keeps its history
    card = Accelerator.objects.get(node__cluster=cluster, vendor_id="GPU-reg-0-3")
    assert card.node.hostname == "reg-n3"
    move = AcceleratorMove.objects.get(accelerator=card)
    assert (move.from_hostname, move.to_hostname) == ("reg-n0", "reg-n3")
