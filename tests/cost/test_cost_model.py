"""The pure cost functions against hand-computed figures (no database)."""

from __future__ import annotations

import dataclasses

import pytest

from cost import model as cm

INPUTS = cm.CostInputs(
    card_price=10_000.0,
    other_capex_share=0.5,  # capex per card 15,000
    amortisation_years=5.0,
    electricity_price_per_kwh=0.10,
    pue=1.2,
    load_factor=0.8,
    operations_per_card_year=876.0,  # 0.1 per card-hour
    budget=1_000_000.0,
    reused_hardware_share=0.2,
    migration_cost=12_000.0,
)


def test_capex_is_amortised_straight_line_over_the_life():
    # 100 cards × 15,000 over 5 × 8,760 hours
    assert cm.capex_per_hour(INPUTS, 100) == pytest.approx(1_500_000 / 43_800)


def test_measured_energy_is_it_power_times_pue_times_price():
    energy = cm.energy_per_hour(INPUTS, cards=100, measured_it_watts=50_000.0, tdp_watts=500.0)
    # 50 kW × 1.2 = 60 kW → 60 kWh per hour × 0.10
    assert energy.measured is True
    assert energy.facility_power_watts == pytest.approx(60_000.0)
    assert energy.cost_per_hour == pytest.approx(6.0)


def test_without_power_telemetry_energy_is_tdp_times_load_factor():
    energy = cm.energy_per_hour(INPUTS, cards=100, measured_it_watts=None, tdp_watts=500.0)
    # 100 × 500 W × 0.8 = 40 kW, × 1.2 PUE × 0.10
    assert energy.measured is False
    assert energy.cost_per_hour == pytest.approx(4.8)
    assert cm.energy_per_hour(INPUTS, cards=100, measured_it_watts=None, tdp_watts=None) is None


def _asset() -> cm.AssetCost:
    return cm.asset_cost(INPUTS, cards=100, measured_it_watts=50_000.0, tdp_watts=500.0)


def test_asset_cost_adds_capex_energy_and_operations():
    asset = _asset()
    assert asset.operations_per_hour == pytest.approx(10.0)
    assert asset.per_hour == pytest.approx(1_500_000 / 43_800 + 6.0 + 10.0)
    assert asset.per_card_hour == pytest.approx(asset.per_hour / 100)


HOUR = 3600.0
# One covered hour, billed by the ledger: 30 cards held all hour, 10 cards held all hour
# (its request of 40 is not what it held), and a queued job that held nothing.
WORKLOADS = [
    cm.WorkloadUse("chat", "acme", "inference", 20, card_seconds=30 * HOUR, covered_seconds=HOUR),
    cm.WorkloadUse(
        "pretrain", "acme", "training", 40, card_seconds=10 * HOUR, covered_seconds=HOUR
    ),
    cm.WorkloadUse("queued", "panda", "training", 16, card_seconds=0.0, covered_seconds=HOUR),
]


def test_workloads_pay_the_cards_they_held_not_their_request_and_idle_is_the_rest():
    asset = _asset()
    assert [w.cards_charged for w in WORKLOADS] == [30.0, 10.0, 0.0]
    allocation = cm.allocation_of(asset, WORKLOADS)
    assert allocation.workload_per_hour == pytest.approx(40 * asset.per_card_hour)
    assert allocation.idle_per_hour == pytest.approx(60 * asset.per_card_hour)
    assert allocation.by_kind["inference"] == pytest.approx(30 * asset.per_card_hour)


def test_without_telemetry_a_workload_holds_nothing_and_the_whole_cluster_is_idle():
    asset = _asset()
    unseen = cm.WorkloadUse("x", "acme", "training", 150)
    assert unseen.cards_held_mean is None and unseen.cards_charged == 0.0
    allocation = cm.allocation_of(asset, [unseen])
    assert allocation.workload_per_hour == 0.0
    assert allocation.idle_per_hour == pytest.approx(asset.per_hour)


def test_cost_per_million_tokens_divides_the_serving_cards_cost_not_the_idle():
    asset = _asset()
    allocation = cm.allocation_of(asset, WORKLOADS)
    inference = cm.kind_cost(allocation, "inference")
    # The 30 cards inference held, at the cost per card-hour: none of the idle cards.
    assert inference == pytest.approx(30 * asset.per_card_hour)
    assert inference < cm.fully_loaded_kind_cost(allocation, "inference")
    assert cm.kind_cost(allocation, "nothing-ran") == 0.0
    # 1,000 tokens/s = 3.6 M tokens per hour
    assert cm.cost_per_million_tokens(inference, 1000.0) == pytest.approx(inference / 3.6)
    assert cm.cost_per_thousand_samples(10.0, 2.0) == pytest.approx(10.0 / 7.2)
    assert cm.cost_per_million_tokens(inference, 0.0) is None


def test_same_workload_tco_prices_the_cards_each_policy_needs():
    tco = cm.same_workload_tco(
        per_card_hour=2.0, workload_cards=60.0, unified_allocated_ratio=0.75,
        split_allocated_ratio=0.5,
    )  # fmt: skip
    assert tco.unified_cards_needed == pytest.approx(80.0)
    assert tco.split_cards_needed == pytest.approx(120.0)
    assert (tco.unified_per_hour, tco.split_per_hour) == pytest.approx((160.0, 240.0))
    assert tco.saving_per_month == pytest.approx(80.0 * 730.0)
    assert cm.same_workload_tco(
        per_card_hour=2.0, workload_cards=60.0, unified_allocated_ratio=0.75,
        split_allocated_ratio=0.0,
    ) is None  # fmt: skip


def test_payback_months_and_never_without_a_saving():
    assert cm.payback_months(12_000.0, 1_000.0) == pytest.approx(12.0)
    assert cm.payback_months(12_000.0, 0.0) is None
    assert cm.payback_months(12_000.0, -5.0) is None


def test_internal_ledger_subtracts_reused_hardware_from_the_budget():
    ledger = cm.internal_ledger(INPUTS, 100)
    assert ledger.capex_total == pytest.approx(1_500_000.0)
    assert ledger.reused_value == pytest.approx(300_000.0)
    assert ledger.new_capex == pytest.approx(1_200_000.0)
    assert ledger.budget_left == pytest.approx(-200_000.0)
    assert not ledger.within_budget


def test_payback_is_not_defined_without_an_investment_to_recover():
    assert cm.payback_months(0.0, 1_000.0) is None


def test_empty_budget_and_migration_cost_fall_back_to_labelled_per_card_assumptions():
    empty = dataclasses.replace(INPUTS, budget=None, migration_cost=None)
    migration = cm.migration_cost(empty, 100)
    assert migration.assumed and migration.value == pytest.approx(
        cm.ASSUMED_MIGRATION_COST_PER_CARD * 100
    )
    funds = cm.budget(empty, 100)
    assert funds.assumed and funds.value == pytest.approx(
        cm.ASSUMED_BUDGET_SHARE_OF_CAPEX * 100 * cm.capex_per_card(empty)
    )
    assert funds.value > 0 and migration.value > 0
    # An operator's figure is used as it is and not labelled an assumption.
    assert cm.migration_cost(INPUTS, 100) == cm.Input(INPUTS.migration_cost, False)
    assert cm.internal_ledger(empty, 100).budget_assumed


def test_internal_ledger_prices_the_cards_pooling_avoids():
    tco = cm.same_workload_tco(
        per_card_hour=1.0,
        workload_cards=60.0,
        unified_allocated_ratio=0.75,
        split_allocated_ratio=0.5,
    )
    ledger = cm.internal_ledger(INPUTS, 100, tco)
    assert ledger.capex_avoided == pytest.approx((120 - 80) * cm.capex_per_card(INPUTS))
