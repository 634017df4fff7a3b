"""Issue 24's showback bugs replayed through the real store, the pages and the API.

A 10-card cluster reports for an hour; ``train-0024`` (request 1) held its card for one
minute of it, two jobs that requested 8 and 6 cards held 2 each. The old model billed each
its request for the whole window whenever it had held anything: 15 cards billed on a
10-card cluster, idle 0, and ``train-0024`` billed a card-hour for a card-minute.
"""

from __future__ import annotations

import csv
import io

import pytest

from cost.models import CostAssumptions
from inventory.models import Cluster
from tests.cost.cost_data import add_workload, make_cluster, write_cluster
from tests.cost.test_cost_page import INPUTS

MINUTES = 60
CARDS = 10


@pytest.fixture
def held(db, tenants):
    CostAssumptions.objects.create(**INPUTS)
    uni = make_cluster("uni", Cluster.Kind.UNIFIED, cards=CARDS)
    legacy = make_cluster("legacy", Cluster.Kind.LEGACY, cards=10)
    write_cluster(
        uni,
        {
            "cluster_power_watts": [4_000.0] * MINUTES,
            "cluster_utilization_allocated_ratio": [0.4] * MINUTES,
        },
    )
    write_cluster(legacy, {"cluster_utilization_allocated_ratio": [0.3] * MINUTES})
    # The newest value is a minute ago: train-0024 held its card one minute, then nothing.
    add_workload(uni, tenants["acme"], "train-0024", "training", 1, [1.0] + [0.0] * 59)
    add_workload(uni, tenants["acme"], "train-big", "training", 8, [2.0] * MINUTES)
    add_workload(uni, tenants["panda"], "serve", "inference", 6, [2.0] * MINUTES)
    return uni


def _cluster(client, name: str) -> dict:
    rows = client.get("/api/v1/cost/clusters/?hours=6").json()["results"]
    return next(r for r in rows if r["cluster"] == name)


def test_a_job_that_held_a_card_for_a_minute_is_billed_a_card_minute(held, client_as):
    rows = client_as("customer").get("/api/v1/cost/showback/?hours=6").json()["results"]
    row = next(r for r in rows if r["workload"] == "train-0024")
    per_card_hour = _cluster(client_as("operator"), "uni")["asset"]["per_card_hour"]
    covered = row["covered_hours"]
    assert covered == pytest.approx(1.0, abs=0.05)
    # One card-minute of the covered hour, not one card for the whole covered hour.
    assert row["cost_window"] == pytest.approx(per_card_hour / 60, abs=0.01)
    assert row["cost_window"] < per_card_hour * covered / 10


def test_billed_plus_idle_is_the_cluster_cost_and_idle_is_not_zero(held, client_as):
    uni = _cluster(client_as("operator"), "uni")
    per_hour = uni["asset"]["per_hour"]
    assert uni["workload_per_hour"] <= per_hour
    # 4 cards and a minute held of 10: 60 percent idle, not 0.
    assert uni["idle_per_hour"] == pytest.approx(per_hour * (1 - (4 + 1 / 60) / CARDS), rel=0.02)
    ledger = uni["ledger"]
    assert ledger["billed_cents"] + ledger["idle_cents"] == ledger["cost_cents"]
    hours = ledger["hours"]
    # Each hour is rounded to the cent once (closed hours are kept in cents), so the window
    # is within a cent per hour of the rate × the covered time.
    exact = per_hour * ledger["covered_seconds"] / 3600 * 100
    assert abs(ledger["cost_cents"] - exact) <= len(hours)
    assert sum(h["idle_cents"] for h in hours) == ledger["idle_cents"]
    assert all(h["billed_cents"] + h["idle_cents"] == h["cost_cents"] for h in hours)
    assert ledger["overcommitted_hours"] == 0


def test_the_tenants_ledgers_add_up_to_no_more_cards_than_the_cluster_has(held, client_as):
    ledgers = client_as("operator").get("/api/v1/cost/showback/?hours=6").json()
    cards = sum(entry["workload_cards"] for entry in ledgers["customer_ledgers"])
    assert cards == pytest.approx(4 + 1 / 60, rel=0.02)
    assert cards <= CARDS


def test_the_cost_page_shows_idle_by_cluster_and_by_hour_with_currency(held, client_as):
    client = client_as("operator")
    page = client.get("/cost/?hours=6").content.decode()
    assert "Ledger: billed to workloads + idle = cluster cost" in page
    assert 'data-ledger-cluster="uni"' in page and 'data-figure="idle-figure"' in page
    ledger = _cluster(client, "uni")["ledger"]
    idle = f"{ledger['idle_cents'] / 100:,.2f} USD"
    assert idle in page
    rows = list(
        csv.DictReader(
            io.StringIO(client.get("/cost/?hours=6&format=csv&table=ledger").content.decode())
        )
    )
    uni_rows = [r for r in rows if r["cluster"] == "uni"]
    assert uni_rows and all(r["currency"] == "USD" for r in uni_rows)
    total = sum(round(float(r["idle"]) * 100) for r in uni_rows)
    assert total == ledger["idle_cents"]
    for r in uni_rows:
        assert round(float(r["billed"]) * 100) + round(float(r["idle"]) * 100) == round(
            float(r["cost"]) * 100
        )


def test_money_on_the_customer_page_carries_currency_and_separators(held, client_as, settings):
    CostAssumptions.objects.update(card_price=100_000_000.0)  # large enough to need grouping
    page = client_as("customer").get("/cost/?hours=6").content.decode()
    rows = client_as("customer").get("/api/v1/cost/showback/?hours=6").json()["results"]
    big = next(r for r in rows if r["workload"] == "train-big")
    assert big["cost_window"] > 1000
    assert f"{big['cost_window']:,.2f} USD" in page
