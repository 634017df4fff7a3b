"""The ledger splits idle cost into allocated idle (cards a scheduler job held while they read
idle, charged to the holder tenant) and unallocated idle (the operator's); billed + allocated
idle + unallocated idle = cost to the cent, hour by hour, persisted, on the page and the API
(issue 32 item 3)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction

from cost.models import CostAssumptions, LedgerHour, LedgerIdleLine
from cost.selectors import cluster_cost
from cost.services import ledger_hours_close
from inventory.models import Accelerator, Cluster
from scheduling.services.sources import scheduler_account_mapping_create, scheduler_source_create
from telemetry.receivers.twin import samples_write
from tests.cost.cost_data import make_cluster, metric
from tests.cost.test_cost_page import INPUTS
from tests.cost.test_ledger_hours import CARDS, _now, _write, floor_hour
from tests.factories import EntityFactory
from tests.scheduling.holdings import job, store

pytestmark = pytest.mark.django_db


@pytest.fixture
def priced(db):
    return CostAssumptions.objects.create(**INPUTS)


@pytest.fixture
def held_idle(priced, tenants):
    """Two closed hours of an 8-card cluster: workload ``big`` billed for 2 cards; a Slurm
    job of acme holds cards 0 and 1 throughout, card 0 idle (1 %), card 1 busy (80 %)."""
    now = _now()
    first = floor_hour(now) - timedelta(hours=4)
    hours = [first, first + timedelta(hours=1)]
    cluster = make_cluster("uni", Cluster.Kind.UNIFIED, cards=CARDS)
    _write(cluster, tenants["acme"], hours, {"big": [2.0] * 120})
    scheduler_account_mapping_create(cluster=cluster, account="tenant-a", tenant=tenants["acme"])
    source = scheduler_source_create(
        cluster=cluster, base_url="http://slurm-head.example.com:6820", user_name="slurmrest",
        token_env="SLURM_JWT_TEST", enabled=False,
    )  # fmt: skip
    cards = {c.index: c for c in Accelerator.objects.filter(node__cluster=cluster)}
    entities = {
        i: EntityFactory(cluster=cluster, key=f"n0/gpu{i}", accelerator=cards[i]) for i in (0, 1)
    }
    store(source, [job(1, cards={"n0": [0, 1]}, start=first - timedelta(minutes=10))], now)
    utilization = metric("accelerator_utilization_ratio", "accelerator")
    stamps = [h.timestamp() + 60 * m for h in hours for m in range(60)]
    rows = [(utilization.pk, entities[0].pk, ts, 0.01) for ts in stamps]
    rows += [(utilization.pk, entities[1].pk, ts, 0.8) for ts in stamps]
    with transaction.atomic():
        samples_write(rows)
    return cluster, hours, now


def test_idle_splits_into_the_holders_and_the_operators_to_the_cent(held_idle, tenants):
    cluster, hours, now = held_idle
    assert ledger_hours_close(now=now, clusters=[cluster])["closed"] == 2
    for row in LedgerHour.objects.filter(cluster=cluster):
        assert row.billed_cents + row.idle_cents == row.cost_cents
        lines = list(row.idle_lines.all())
        assert [line.tenant_id for line in lines] == [tenants["acme"].pk]
        assert sum(line.cents for line in lines) == row.allocated_idle_cents
        # One idle card of eight for the whole hour: an eighth of the hour's cost.
        assert lines[0].card_seconds == pytest.approx(3600, abs=60)
        assert row.allocated_idle_cents == pytest.approx(row.cost_cents / CARDS, abs=2)
        assert 0 < row.allocated_idle_cents < row.idle_cents
    ledger = cluster_cost(cluster, hours[0], hours[1] + timedelta(hours=1), now=now).ledger
    assert ledger.allocated_idle_cents == sum(
        LedgerHour.objects.filter(cluster=cluster).values_list("allocated_idle_cents", flat=True)
    )
    assert (
        ledger.billed_cents + ledger.allocated_idle_cents + ledger.unallocated_idle_cents
        == ledger.cost_cents
    )
    assert ledger.idle_held[tenants["acme"].pk][1] == ledger.allocated_idle_cents


def test_a_busy_held_card_is_not_allocated_idle(held_idle):
    cluster, _hours, now = held_idle
    ledger_hours_close(now=now, clusters=[cluster])
    # Card 1 is held too but busy: only card 0's hour counts (checked above as one card).
    assert LedgerIdleLine.objects.filter(hour__cluster=cluster).count() == 2
    for row in LedgerHour.objects.filter(cluster=cluster):
        assert row.idle_lines.get().card_seconds < 2 * 3600 * 0.6


def test_a_cluster_without_a_scheduler_keeps_all_idle_unallocated(priced, tenants):
    now = _now()
    first = floor_hour(now) - timedelta(hours=3)
    cluster = make_cluster("plain", Cluster.Kind.UNIFIED, cards=CARDS)
    _write(cluster, tenants["acme"], [first], {"big": [2.0] * 60})
    ledger_hours_close(now=now, clusters=[cluster])
    row = LedgerHour.objects.get(cluster=cluster)
    assert row.idle_cents > 0 and row.allocated_idle_cents == 0


def test_the_cost_page_and_api_show_the_split(held_idle, client_as):
    cluster, hours, now = held_idle
    ledger_hours_close(now=now, clusters=[cluster])
    page = client_as("operator").get("/cost/?hours=24").content.decode()
    assert "data-allocated-idle" in page and "data-idle-split" in page
    assert "Allocated idle (holders)" in page and "Acme" in page
    body = client_as("operator").get("/api/v1/cost/clusters/?hours=24").json()
    ledgers = [c["ledger"] for c in body["results"] if c["cluster"] == "uni"]
    led = ledgers[0]
    assert led["allocated_idle_cents"] > 0
    assert (
        led["billed_cents"] + led["allocated_idle_cents"] + led["unallocated_idle_cents"]
        == led["cost_cents"]
    )
    assert led["allocated_idle_by_tenant"][0]["tenant"] == "acme"
    for h in led["hours"]:
        assert (
            h["billed_cents"] + h["allocated_idle_cents"] + h["unallocated_idle_cents"]
            == (h["cost_cents"])
        )
