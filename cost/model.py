"""The cost model of docs/architecture.md §6, OpenCost-style, as pure functions (no Django, no DB).

Everything is an hourly *rate* computed from means over the chosen window; totals over the
window are rate × window hours. Unit costs (per 1M tokens, per 1k samples) are ratios of
rates, so they do not depend on how much of the window has data.

* asset cost/h = capex amortised over its life + energy (power × PUE × price/kWh) + operations
* workload cost = the card-seconds it held, interval by interval, × asset cost per
  card-second (:mod:`cost.ledger`: billed + idle = asset cost, to the cent)
* idle cost = asset cost − workload cost (never below 0: over-committed hours are capped
  and flagged)
"""

from __future__ import annotations

from dataclasses import dataclass, field

HOURS_PER_YEAR = 8760.0
HOURS_PER_MONTH = HOURS_PER_YEAR / 12.0
# Assumptions used where the operator left the input empty; pages label them as such.
# Migration: engineering, dual running and cut-over, an order of magnitude per card moved
# (a few engineer-weeks per thousand cards plus a month of dual running at a few percent).
ASSUMED_MIGRATION_COST_PER_CARD = 1_500.0
# Budget: funding for 80% of the unified cluster's list capex, so reuse has to close the gap.
ASSUMED_BUDGET_SHARE_OF_CAPEX = 0.8


@dataclass(frozen=True)
class CostInputs:
    """The operator-editable inputs (mirrors ``cost.models.CostAssumptions``)."""

    card_price: float
    other_capex_share: float
    amortisation_years: float
    electricity_price_per_kwh: float
    pue: float
    load_factor: float
    operations_per_card_year: float
    budget: float | None = None  # None: the assumption below applies
    reused_hardware_share: float = 0.0
    migration_cost: float | None = None  # None: the assumption below applies
    currency: str = "USD"
    is_assumption: bool = True


@dataclass(frozen=True)
class WorkloadUse:
    """One workload's cards over the window: its request and what the ledger says it held."""

    name: str
    tenant: str
    kind: str  # "training" or "inference"
    cards_requested: float
    card_seconds: float = 0.0  # held over the window's covered time (``cost.ledger``)
    covered_seconds: float = 0.0  # the cluster's covered time in the window
    billed_cents: int = 0
    basis: str = ""  # measured / scheduler / requested (``cost.allocation.Basis``)

    @property
    def cards_held_mean(self) -> float | None:
        """Cards held on average over the covered time; ``None`` without telemetry."""
        if self.covered_seconds <= 0:
            return None
        return self.card_seconds / self.covered_seconds

    @property
    def cards_charged(self) -> float:
        """The mean cards billed: what it held, never its request for the whole window."""
        return self.cards_held_mean or 0.0

    @property
    def billed(self) -> float:
        return self.billed_cents / 100.0


@dataclass(frozen=True)
class Energy:
    """Energy cost per hour and where the power figure came from."""

    it_power_watts: float
    facility_power_watts: float
    cost_per_hour: float
    measured: bool


@dataclass(frozen=True)
class AssetCost:
    cards: int
    capex_per_hour: float
    energy: Energy
    operations_per_hour: float

    @property
    def per_hour(self) -> float:
        return self.capex_per_hour + self.energy.cost_per_hour + self.operations_per_hour

    @property
    def per_card_hour(self) -> float:
        return self.per_hour / self.cards if self.cards else 0.0


@dataclass(frozen=True)
class Allocation:
    """Asset cost split into workloads (by kind) and idle."""

    asset_per_hour: float
    workload_per_hour: float
    idle_per_hour: float
    by_kind: dict[str, float] = field(default_factory=dict)


def capex_per_card(inputs: CostInputs) -> float:
    """Card price plus its share of servers, network and other capex."""
    return inputs.card_price * (1.0 + inputs.other_capex_share)


def capex_per_hour(inputs: CostInputs, cards: int) -> float:
    """Straight-line amortisation of the cluster's capex over its life."""
    return cards * capex_per_card(inputs) / (inputs.amortisation_years * HOURS_PER_YEAR)


def energy_per_hour(
    inputs: CostInputs,
    *,
    cards: int,
    measured_it_watts: float | None,
    tdp_watts: float | None,
) -> Energy | None:
    """Energy cost per hour: measured IT power if stored, else TDP × load factor per card.

    ``None`` when neither is known (no telemetry and no TDP in the catalogue).
    """
    if measured_it_watts is not None:
        it, measured = measured_it_watts, True
    elif tdp_watts is not None:
        it, measured = cards * tdp_watts * inputs.load_factor, False
    else:
        return None
    facility = it * inputs.pue
    cost = facility / 1000.0 * inputs.electricity_price_per_kwh
    return Energy(it, facility, cost, measured)


def operations_per_hour(inputs: CostInputs, cards: int) -> float:
    return cards * inputs.operations_per_card_year / HOURS_PER_YEAR


def asset_cost(
    inputs: CostInputs, *, cards: int, measured_it_watts: float | None, tdp_watts: float | None
) -> AssetCost | None:
    """The cluster's hourly cost; ``None`` when energy cannot be estimated."""
    energy = energy_per_hour(
        inputs, cards=cards, measured_it_watts=measured_it_watts, tdp_watts=tdp_watts
    )
    if energy is None:
        return None
    return AssetCost(
        cards=cards,
        capex_per_hour=capex_per_hour(inputs, cards),
        energy=energy,
        operations_per_hour=operations_per_hour(inputs, cards),
    )


def allocation_of(asset: AssetCost, workloads: list[WorkloadUse]) -> Allocation:
    """Hourly rates of the ledger's window: workload cost by kind, and idle = asset − workload.

    A rate is the mean cards held over the covered time × the cost per card-hour (the
    ledger's cents are these rates × covered hours, rounded once)."""
    by_kind: dict[str, float] = {}
    for w in workloads:
        by_kind[w.kind] = by_kind.get(w.kind, 0.0) + w.cards_charged * asset.per_card_hour
    total = sum(by_kind.values())
    return Allocation(
        asset_per_hour=asset.per_hour,
        workload_per_hour=total,
        idle_per_hour=max(asset.per_hour - total, 0.0),
        by_kind=by_kind,
    )


def kind_cost(allocation: Allocation, kind: str) -> float:
    """What the cards a kind's workloads held cost per hour (mean cards held × cost per
    card-hour), without any share of idle: the cost of the serving cards, which a cost per 1M
    tokens divides by the tokens those cards served over the same covered time."""
    return allocation.by_kind.get(kind, 0.0)


def fully_loaded_kind_cost(allocation: Allocation, kind: str) -> float:
    """A kind's workload cost plus its pro-rata share of idle (so the asset is fully absorbed).

    Unit costs use this: tokens and samples have to pay for the idle capacity too.
    """
    if allocation.workload_per_hour <= 0:
        return 0.0
    share = allocation.by_kind.get(kind, 0.0) / allocation.workload_per_hour
    return allocation.asset_per_hour * share


def cost_per_million_tokens(
    inference_cost_per_hour: float, tokens_per_second: float
) -> float | None:
    tokens_per_hour = tokens_per_second * 3600.0
    if tokens_per_hour <= 0:
        return None
    return inference_cost_per_hour / tokens_per_hour * 1e6


def cost_per_thousand_samples(
    training_cost_per_hour: float, samples_per_second: float
) -> float | None:
    samples_per_hour = samples_per_second * 3600.0
    if samples_per_hour <= 0:
        return None
    return training_cost_per_hour / samples_per_hour * 1e3


@dataclass(frozen=True)
class SameWorkloadTco:
    """The unified cluster's measured workload priced under both policies, per hour.

    Both use the unified cluster's hardware and inputs; only the allocated utilization differs
    (the unified cluster's vs the split baseline's), so the difference is what pooling saves.
    """

    workload_cards: float
    unified_cards_needed: float
    split_cards_needed: float
    unified_per_hour: float
    split_per_hour: float

    @property
    def saving_per_hour(self) -> float:
        return self.split_per_hour - self.unified_per_hour

    @property
    def saving_per_month(self) -> float:
        return self.saving_per_hour * HOURS_PER_MONTH


def same_workload_tco(
    *,
    per_card_hour: float,
    workload_cards: float,
    unified_allocated_ratio: float,
    split_allocated_ratio: float,
) -> SameWorkloadTco | None:
    """Cards each policy needs for ``workload_cards`` at its measured allocated utilization.

    ``None`` if either utilization is not positive (no data, or an idle cluster).
    """
    if unified_allocated_ratio <= 0 or split_allocated_ratio <= 0:
        return None
    unified_cards = workload_cards / unified_allocated_ratio
    split_cards = workload_cards / split_allocated_ratio
    return SameWorkloadTco(
        workload_cards=workload_cards,
        unified_cards_needed=unified_cards,
        split_cards_needed=split_cards,
        unified_per_hour=unified_cards * per_card_hour,
        split_per_hour=split_cards * per_card_hour,
    )


@dataclass(frozen=True)
class Input:
    """An input figure and whether it is the operator's or the built-in assumption."""

    value: float
    assumed: bool


def migration_cost(inputs: CostInputs, cards: int) -> Input:
    """The operator's migration cost, else ``ASSUMED_MIGRATION_COST_PER_CARD`` × cards."""
    if inputs.migration_cost is not None:
        return Input(inputs.migration_cost, False)
    return Input(ASSUMED_MIGRATION_COST_PER_CARD * cards, True)


def budget(inputs: CostInputs, cards: int) -> Input:
    """The operator's budget, else ``ASSUMED_BUDGET_SHARE_OF_CAPEX`` × the list capex."""
    if inputs.budget is not None:
        return Input(inputs.budget, False)
    return Input(ASSUMED_BUDGET_SHARE_OF_CAPEX * cards * capex_per_card(inputs), True)


def payback_months(investment: float, saving_per_month: float) -> float | None:
    """Months to recover ``investment`` from a monthly saving.

    ``None`` (not defined) when there is nothing to recover or no saving to recover it from:
    a payback of "0 months" for a zero investment says nothing.
    """
    if saving_per_month <= 0 or investment <= 0:
        return None
    return investment / saving_per_month


@dataclass(frozen=True)
class InternalLedger:
    """Budget vs the capex the unified cluster needs once existing hardware is reused."""

    capex_total: float
    reused_value: float
    new_capex: float
    budget: float
    budget_assumed: bool = False
    capex_avoided: float | None = None  # cards a split cluster would need on top, priced

    @property
    def budget_left(self) -> float:
        return self.budget - self.new_capex

    @property
    def within_budget(self) -> bool:
        return self.budget_left >= 0


def internal_ledger(
    inputs: CostInputs, cards: int, tco: SameWorkloadTco | None = None
) -> InternalLedger:
    """Budget, reuse and — given the same-workload comparison — the capex pooling avoids."""
    total = cards * capex_per_card(inputs)
    reused = total * inputs.reused_hardware_share
    funds = budget(inputs, cards)
    avoided = None
    if tco is not None:
        avoided = (tco.split_cards_needed - tco.unified_cards_needed) * capex_per_card(inputs)
    return InternalLedger(
        capex_total=total,
        reused_value=reused,
        new_capex=total - reused,
        budget=funds.value,
        budget_assumed=funds.assumed,
        capex_avoided=avoided,
    )
