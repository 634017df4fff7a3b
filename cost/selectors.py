"""Cost figures from stored telemetry + the editable inputs (reads only; maths in ``cost.model``).

Every figure is built from a window's means (see :mod:`telemetry.read.local.windows`) and the
cluster's :class:`CostAssumptions` (its own row, else the global default, else the model's
defaults, unsaved). Each result keeps the inputs and sources it used so pages can show them
next to the number.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.utils import timezone
from django.utils.translation import gettext_lazy

from cluster_portal.web.caching import shared_read
from cluster_portal.web.rows import plain_rows
from cost import model as cm
from cost.allocation import Basis, Billable
from cost.hours import Pricing, WindowNotCovered, window_ledger
from cost.ledger import Ledger
from cost.models import CostAssumptions
from inventory.models import Accelerator, Cluster, Workload
from inventory.selectors import defaults_first
from telemetry.read import WindowStat, cluster_stats

INPUT_FIELDS = (
    "currency",
    "card_price",
    "other_capex_share",
    "amortisation_years",
    "electricity_price_per_kwh",
    "pue",
    "load_factor",
    "operations_per_card_year",
    "budget",
    "reused_hardware_share",
    "migration_cost",
    "is_assumption",
)
CLUSTER_FIGURES = (
    "cluster_power_watts",
    "cluster_utilization_allocated_ratio",
    "cluster_utilization_busy_ratio",
    "cluster_inference_tokens_per_second",
    "cluster_training_samples_per_second",
)


def assumptions_for(cluster: Cluster | None) -> CostAssumptions:
    """The cluster's own row, else the global default row, else unsaved model defaults."""
    if cluster is not None:
        own = CostAssumptions.objects.filter(cluster=cluster).first()
        if own is not None:
            return own
    default = CostAssumptions.objects.filter(cluster__isnull=True).first()
    return default if default is not None else CostAssumptions()


def inputs_of(row: CostAssumptions) -> cm.CostInputs:
    return cm.CostInputs(**{name: getattr(row, name) for name in INPUT_FIELDS})


def card_count(cluster: Cluster) -> int:
    # A MIG slice is part of its GPU's card, not another card (docs/architecture.md §5).
    return Accelerator.objects.filter(node__cluster=cluster, parent__isnull=True).count()


BASIS_LABELS = {
    Basis.MEASURED: gettext_lazy("measured: cards attributed from exporter pod labels"),
    Basis.SCHEDULER: gettext_lazy("scheduler: cards the scheduler granted"),
    Basis.REQUESTED: gettext_lazy("estimate: cards requested (no series selector yet)"),
}


@dataclass
class ClusterCost:
    """One cluster's cost over a window, with everything it was computed from."""

    cluster: Cluster
    start: datetime
    end: datetime
    assumptions: CostAssumptions
    inputs: cm.CostInputs
    cards: int
    tdp_watts: float | None
    power: WindowStat | None
    allocated: WindowStat | None
    busy: WindowStat | None
    tokens: WindowStat | None
    samples: WindowStat | None
    asset: cm.AssetCost | None
    workloads: list[cm.WorkloadUse] = field(default_factory=list)
    allocation: cm.Allocation | None = None
    ledger: Ledger | None = None  # billed + idle = cost, in cents (``cost.ledger``)
    # Why there is no ledger although the cluster has a cost: the window needs closed hours
    # the ledger never persisted and whose minute data is pruned (``cost.hours``).
    refusal: str = ""

    @property
    def hours(self) -> float:
        return (self.end - self.start).total_seconds() / 3600.0

    @property
    def has_usage(self) -> bool:
        return any(w.card_seconds for w in self.workloads)

    @property
    def covered_hours(self) -> float:
        return self.ledger.covered_seconds / 3600.0 if self.ledger else 0.0

    @property
    def cost_per_million_tokens(self) -> float | None:
        """The serving cards' cost over the tokens they served: the mean cards the inference
        workloads held × the cost per card-hour, over the cluster's output tokens/s × 3,600,
        both over the same covered time. Idle cards are not in it (the ledger bills them as
        idle); a fleet serving below its cards' capacity still pays for its own spare replicas,
        so the figure is shown with :attr:`tokens_per_inference_card`."""
        if self.allocation is None or self.tokens is None:
            return None
        cost = cm.kind_cost(self.allocation, Workload.Kind.INFERENCE)
        return cm.cost_per_million_tokens(cost, self.tokens.mean) if cost else None

    @property
    def inference_cards_held(self) -> float | None:
        """Mean cards the inference workloads held over the covered time (None: none seen)."""
        cards = sum(
            w.cards_held_mean or 0.0 for w in self.workloads if w.kind == Workload.Kind.INFERENCE
        )
        return cards if cards > 0 else None

    @property
    def tokens_per_inference_card(self) -> float | None:
        """Tokens/s per card the inference workloads held on average (the load a cost per 1M
        tokens is measured at: replicas serving at a few per cent of their capacity pay for
        the spare rest in every token, so the figure is shown with it)."""
        cards = self.inference_cards_held
        if self.tokens is None or cards is None:
            return None
        return self.tokens.mean / cards

    @property
    def cost_per_thousand_samples(self) -> float | None:
        if self.allocation is None or self.samples is None:
            return None
        cost = cm.fully_loaded_kind_cost(self.allocation, Workload.Kind.TRAINING)
        return cm.cost_per_thousand_samples(cost, self.samples.mean) if cost else None


@dataclass(frozen=True)
class Roster:
    """A cluster's workloads as cost reads them (``(pk, name, tenant id, tenant slug, kind,
    cards requested)``), their telemetry entities and its card count: what does not depend
    on the window, read once per few seconds for every window asked."""

    workloads: list[tuple[int, str, int, str, str, float]]
    entity_of: dict[int, int]
    cards: int
    selector_of: dict[int, str] = field(default_factory=dict)


def roster(cluster: Cluster) -> Roster:
    def read() -> Roster:
        # One query for the workloads with their telemetry entity, as plain rows.
        rows = plain_rows(
            Workload.objects.filter(cluster=cluster).values_list(
                "pk",
                "name",
                "tenant_id",
                "tenant__slug",
                "kind",
                "cards_requested",
                "entity__pk",
                "series_selector",
            )
        )
        workloads = [(pk, n, t, slug, k, float(c)) for pk, n, t, slug, k, c, _e, _s in rows]
        entity_of = {row[0]: row[6] for row in rows if row[6] is not None}
        selector_of = {row[0]: row[7] for row in rows if row[7]}
        return Roster(
            workloads=workloads,
            entity_of=entity_of,
            cards=card_count(cluster),
            selector_of=selector_of,
        )

    return shared_read("cost-roster", cluster.pk, read)


def workload_uses(
    found: Roster, ledger: Ledger | None, *, tenant_id: int | None = None
) -> list[cm.WorkloadUse]:
    """The cluster's workloads (one tenant's, if given) with what the ledger bills them.

    Plain rows from the cluster's :func:`roster`, not model instances: a 10,240-card cluster
    runs a few thousand workloads and building each with its tenant was most of a cost
    request."""
    covered = ledger.covered_seconds if ledger else 0.0
    lines = {line.key: line for line in ledger.workloads} if ledger else {}
    uses = []
    for pk, name, owner, tenant_slug, kind, cards_requested in found.workloads:
        if tenant_id is not None and owner != tenant_id:
            continue
        line = lines.get(pk)
        uses.append(
            cm.WorkloadUse(
                name=name,
                tenant=tenant_slug,
                kind=kind,
                cards_requested=cards_requested,
                card_seconds=line.card_seconds if line else 0.0,
                covered_seconds=covered,
                billed_cents=line.billed_cents if line else 0,
                basis=ledger.basis.get(pk, "") if ledger else "",
            )
        )
    return uses


def billables(found: Roster) -> list[Billable]:
    """The roster's workloads as the ledger bills them (cost.allocation)."""
    return [
        Billable(
            pk=row[0],
            entity=found.entity_of.get(row[0]),
            selector=found.selector_of.get(row[0], ""),
            cards_requested=row[5],
        )
        for row in found.workloads
    ]


def cluster_cost(
    cluster: Cluster, start: datetime, end: datetime, *, now: datetime | None = None
) -> ClusterCost:
    """Asset cost rate of one cluster over ``[start, end)`` and its ledger (billed + idle).

    A window the ledger cannot cover leaves ``ledger`` empty and says why in ``refusal``;
    bills (:func:`tenant_showback`, the cost API) refuse such a window outright."""
    row = assumptions_for(cluster)
    inputs = inputs_of(row)
    found = roster(cluster)
    cards = found.cards
    tdp = cluster.hardware_model.tdp_watts if cluster.hardware_model_id else None
    stats = cluster_stats(cluster, list(CLUSTER_FIGURES), start, end)
    power = stats["cluster_power_watts"]
    result = ClusterCost(
        cluster=cluster,
        start=start,
        end=end,
        assumptions=row,
        inputs=inputs,
        cards=cards,
        tdp_watts=tdp,
        power=power,
        allocated=stats["cluster_utilization_allocated_ratio"],
        busy=stats["cluster_utilization_busy_ratio"],
        tokens=stats["cluster_inference_tokens_per_second"],
        samples=stats["cluster_training_samples_per_second"],
        asset=cm.asset_cost(
            inputs,
            cards=cards,
            measured_it_watts=power.mean if power else None,
            tdp_watts=tdp,
        )
        if cards
        else None,
    )
    if result.asset is not None:
        # Whole hours: closed ones from the persisted ledger, the open one so far (cost.hours).
        try:
            result.ledger = window_ledger(
                cluster,
                start,
                end,
                now=now or timezone.now(),
                pricing=Pricing(inputs=inputs, cards=cards, tdp_watts=tdp),
                workloads=billables(found),
            )
        except WindowNotCovered as refused:
            result.refusal = str(refused)
    result.workloads = workload_uses(found, result.ledger)
    if result.asset is not None:
        result.allocation = cm.allocation_of(result.asset, result.workloads)
    return result


def clusters_cost(start: datetime, end: datetime) -> list[ClusterCost]:
    return [cluster_cost(c, start, end) for c in Cluster.objects.select_related("hardware_model")]


def refuse_uncovered(costs: list[ClusterCost]) -> list[ClusterCost]:
    """``costs``, or :class:`WindowNotCovered` naming each cluster the window cannot bill."""
    refused = [c for c in costs if c.refusal]
    if refused:
        raise WindowNotCovered(
            " ".join(f"{c.cluster.name}: {c.refusal}" for c in refused), hours=[], kept_from=None
        )
    return costs


@dataclass(frozen=True)
class Comparison:
    """Both ledgers: the unified cluster's workload under both policies, payback, budget."""

    unified: ClusterCost
    baseline: ClusterCost
    tco: cm.SameWorkloadTco | None
    payback_months: float | None
    ledger: cm.InternalLedger
    migration: cm.Input


def compare_policies(unified: ClusterCost, baseline: ClusterCost) -> Comparison:
    """TCO of unified vs split for the unified cluster's measured workload; both ledgers."""
    tco = None
    if unified.asset is not None and unified.allocated and baseline.allocated:
        tco = cm.same_workload_tco(
            per_card_hour=unified.asset.per_card_hour,
            workload_cards=unified.allocated.mean * unified.cards,
            unified_allocated_ratio=unified.allocated.mean,
            split_allocated_ratio=baseline.allocated.mean,
        )
    migration = cm.migration_cost(unified.inputs, unified.cards)
    payback = cm.payback_months(migration.value, tco.saving_per_month) if tco else None
    return Comparison(
        unified=unified,
        baseline=baseline,
        tco=tco,
        payback_months=payback,
        ledger=cm.internal_ledger(unified.inputs, unified.cards, tco),
        migration=migration,
    )


@dataclass(frozen=True)
class TenantLedger:
    """The customer ledger of one tenant: its workloads on the split baseline vs unified.

    The tenant's cards are its workloads' measured mean cards on the unified cluster; each
    policy needs them ÷ its measured allocated utilization, priced at the unified cluster's
    cost per card-hour. The tenant carries its share of the migration cost (its share of the
    cluster's workload cards).
    """

    tenant: str
    currency: str
    tco: cm.SameWorkloadTco
    migration_cost: float
    migration_assumed: bool
    payback_months: float | None


def tenant_ledgers(comparison: Comparison, *, tenant: str | None = None) -> list[TenantLedger]:
    """Customer ledgers per tenant (one tenant's with ``tenant``); empty without data."""
    unified, baseline = comparison.unified, comparison.baseline
    if unified.asset is None or not unified.allocated or not baseline.allocated:
        return []
    cards_by_tenant: dict[str, float] = {}
    for use in unified.workloads:
        if tenant is None or use.tenant == tenant:
            cards_by_tenant[use.tenant] = cards_by_tenant.get(use.tenant, 0.0) + use.cards_charged
    total = sum(use.cards_charged for use in unified.workloads)
    out = []
    for slug, cards in sorted(cards_by_tenant.items()):
        tco = cm.same_workload_tco(
            per_card_hour=unified.asset.per_card_hour,
            workload_cards=cards,
            unified_allocated_ratio=unified.allocated.mean,
            split_allocated_ratio=baseline.allocated.mean,
        )
        if tco is None or cards <= 0 or total <= 0:
            continue
        share = comparison.migration.value * cards / total
        out.append(
            TenantLedger(
                tenant=slug,
                currency=unified.inputs.currency,
                tco=tco,
                migration_cost=share,
                migration_assumed=comparison.migration.assumed,
                payback_months=cm.payback_months(share, tco.saving_per_month),
            )
        )
    return out


@dataclass(frozen=True)
class ShowbackRow:
    """One workload's line of a tenant's showback: the ledger's cents, and what they are for."""

    cluster: str
    workload: str
    kind: str
    cards_requested: float
    cards_held_mean: float | None  # over the covered time; None: no telemetry in the window
    card_hours: float  # held, interval by interval
    cost_per_hour: float  # mean cards held × the cluster's cost per card-hour
    cost_window: float  # the ledger's cents for the window (only the time with data)
    currency: str
    covered_hours: float = 0.0  # hours of the window the cluster's telemetry covers
    window_hours: float = 0.0
    basis: str = ""  # measured / scheduler / requested (``cost.allocation.Basis``)

    @property
    def basis_label(self) -> str:
        return str(BASIS_LABELS.get(self.basis, self.basis))

    @property
    def kind_label(self) -> str:
        """The workload kind in the reader's language (``kind`` stays the code, as in the CSV)."""
        return str(dict(Workload.Kind.choices).get(self.kind, self.kind))


def tenant_showback(tenant_id: int, start: datetime, end: datetime) -> list[ShowbackRow]:
    """One tenant's workloads and what they cost over the window (OpenCost showback).

    Each line is the cluster ledger's (:mod:`cost.ledger`): the card-seconds the workload held,
    priced at the cluster's cost per card-second, only for the time the cluster's telemetry
    covers — a cluster that reported for 40 minutes of a 24 h window bills 40 minutes."""
    window_hours = (end - start).total_seconds() / 3600.0
    rows: list[ShowbackRow] = []
    clusters = Cluster.objects.filter(workloads__tenant_id=tenant_id).distinct()
    for cluster in clusters.select_related("hardware_model"):
        cost = refuse_uncovered([cluster_cost(cluster, start, end)])[0]
        hours = cost.covered_hours
        per_card_hour = cost.asset.per_card_hour if cost.asset else 0.0
        for use in workload_uses(roster(cluster), cost.ledger, tenant_id=tenant_id):
            rows.append(
                ShowbackRow(
                    cluster=cluster.name,
                    workload=use.name,
                    kind=use.kind,
                    cards_requested=use.cards_requested,
                    cards_held_mean=use.cards_held_mean,
                    card_hours=use.card_seconds / 3600.0,
                    cost_per_hour=(use.cards_held_mean or 0.0) * per_card_hour,
                    cost_window=use.billed,
                    currency=cost.inputs.currency,
                    covered_hours=hours,
                    window_hours=window_hours,
                    basis=use.basis,
                )
            )
    return rows


def default_pair(costs: list[ClusterCost]) -> tuple[ClusterCost | None, ClusterCost | None]:
    """The default unified cluster and the default split/legacy one (the demo's pair): the
    operator-marked defaults, else the first of each kind by name."""
    costs = defaults_first(costs, cluster=lambda c: c.cluster)
    unified = next((c for c in costs if c.cluster.kind == Cluster.Kind.UNIFIED), None)
    baseline = next((c for c in costs if c.cluster.kind != Cluster.Kind.UNIFIED), None)
    return unified, baseline


def customer_ledger(tenant_slug: str, start: datetime, end: datetime) -> TenantLedger | None:
    """One tenant's customer ledger on the default unified/baseline pair (``None``: no data)."""
    unified, baseline = default_pair(clusters_cost(start, end))
    if unified is None or baseline is None:
        return None
    ledgers = tenant_ledgers(compare_policies(unified, baseline), tenant=tenant_slug)
    return ledgers[0] if ledgers else None


def tenant_ledger_json(ledger: TenantLedger) -> dict:
    tco = ledger.tco
    return {
        "tenant": ledger.tenant,
        "currency": ledger.currency,
        "workload_cards": tco.workload_cards,
        "split_per_hour": tco.split_per_hour,
        "unified_per_hour": tco.unified_per_hour,
        "saving_per_month": tco.saving_per_month,
        "migration_cost": ledger.migration_cost,
        "migration_cost_assumed": ledger.migration_assumed,
        "payback_months": ledger.payback_months,
    }
