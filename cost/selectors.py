"""Cost figures from stored telemetry + the editable inputs (reads only; maths in ``cost.model``).

Every figure is built from a window's means (see :mod:`telemetry.selectors.windows`) and the
cluster's :class:`CostAssumptions` (its own row, else the global default, else the model's
defaults, unsaved). Each result keeps the inputs and sources it used so pages can show them
next to the number.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from cluster_portal.web.caching import shared_read
from cluster_portal.web.rows import plain_rows
from cost import model as cm
from cost.coverage import cluster_covered_hours
from cost.models import CostAssumptions
from inventory.models import Accelerator, Cluster, Workload
from inventory.selectors import defaults_first
from telemetry.models import EntityKind
from telemetry.read import WindowStat, cluster_stat, cluster_stats, entity_sums

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
ALLOCATED_CARDS = "workload_allocated_cards"
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
    return Accelerator.objects.filter(node__cluster=cluster).count()


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

    @property
    def hours(self) -> float:
        return (self.end - self.start).total_seconds() / 3600.0

    @property
    def has_usage(self) -> bool:
        return any(w.cards_used_mean for w in self.workloads)

    @property
    def cost_per_million_tokens(self) -> float | None:
        if self.allocation is None or self.tokens is None:
            return None
        cost = cm.fully_loaded_kind_cost(self.allocation, Workload.Kind.INFERENCE)
        return cm.cost_per_million_tokens(cost, self.tokens.mean) if cost else None

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


def roster(cluster: Cluster) -> Roster:
    def read() -> Roster:
        # One query for the workloads with their telemetry entity, as plain rows.
        rows = plain_rows(
            Workload.objects.filter(cluster=cluster).values_list(
                "pk", "name", "tenant_id", "tenant__slug", "kind", "cards_requested", "entity__pk"
            )
        )
        workloads = [(pk, n, t, slug, k, float(c)) for pk, n, t, slug, k, c, _e in rows]
        entity_of = {row[0]: row[6] for row in rows if row[6] is not None}
        return Roster(workloads=workloads, entity_of=entity_of, cards=card_count(cluster))

    return shared_read("cost-roster", cluster.pk, read)


def workload_uses(
    cluster: Cluster,
    start: datetime,
    end: datetime,
    *,
    tenant_id: int | None = None,
    found: Roster | None = None,
) -> list[cm.WorkloadUse]:
    """Requested and measured cards of the cluster's workloads (one tenant's, if given).

    Plain rows from the cluster's :func:`roster`, not model instances: a 10,240-card cluster
    runs a few thousand workloads and building each with its tenant was most of a cost
    request."""
    sums = entity_sums(
        cluster=cluster, metric_name=ALLOCATED_CARDS, kind=EntityKind.WORKLOAD, start=start, end=end
    )
    found = found or roster(cluster)
    uses = []
    for pk, name, owner, tenant_slug, kind, cards_requested in found.workloads:
        if tenant_id is not None and owner != tenant_id:
            continue
        agg = sums.get(found.entity_of.get(pk, -1))
        uses.append(
            cm.WorkloadUse(
                name=name,
                tenant=tenant_slug,
                kind=kind,
                cards_requested=cards_requested,
                cards_used_mean=agg[0] / agg[1] if agg else None,
            )
        )
    return uses


def cluster_cost(cluster: Cluster, start: datetime, end: datetime) -> ClusterCost:
    """Asset, workload and idle cost rates of one cluster over ``[start, end)``."""
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
    result.workloads = workload_uses(cluster, start, end, found=found)
    if result.asset is not None:
        result.allocation = cm.allocate(result.asset, result.workloads)
    return result


def clusters_cost(start: datetime, end: datetime) -> list[ClusterCost]:
    return [cluster_cost(c, start, end) for c in Cluster.objects.select_related("hardware_model")]


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
    cluster: str
    workload: str
    kind: str
    cards_requested: float
    cards_used_mean: float | None
    cards_charged: float
    cost_per_hour: float
    cost_window: float  # cost_per_hour × covered_hours: only the time with data is billed
    currency: str
    covered_hours: float = 0.0  # hours of the window the cluster's telemetry covers
    window_hours: float = 0.0

    @property
    def kind_label(self) -> str:
        """The workload kind in the reader's language (``kind`` stays the code, as in the CSV)."""
        return str(dict(Workload.Kind.choices).get(self.kind, self.kind))


def tenant_showback(tenant_id: int, start: datetime, end: datetime) -> list[ShowbackRow]:
    """One tenant's workloads and what they cost over the window (OpenCost showback).

    Billed for the time the cluster's telemetry covers, not the whole window: a cluster that
    has reported for 40 minutes of a 24 h window bills 40 minutes (see :mod:`cost.coverage`).
    """
    window_hours = (end - start).total_seconds() / 3600.0
    rows: list[ShowbackRow] = []
    clusters = Cluster.objects.filter(workloads__tenant_id=tenant_id).distinct()
    for cluster in clusters.select_related("hardware_model"):
        hours = cluster_covered_hours(cluster, start, end)
        inputs = inputs_of(assumptions_for(cluster))
        power = cluster_stat(cluster, "cluster_power_watts", start, end)
        found = roster(cluster)
        cards = found.cards
        tdp = cluster.hardware_model.tdp_watts if cluster.hardware_model_id else None
        asset = cm.asset_cost(
            inputs, cards=cards, measured_it_watts=power.mean if power else None, tdp_watts=tdp
        )
        for use in workload_uses(cluster, start, end, tenant_id=tenant_id, found=found):
            per_hour = cm.workload_cost_per_hour(asset, use) if asset and cards else 0.0
            rows.append(
                ShowbackRow(
                    cluster=cluster.name,
                    workload=use.name,
                    kind=use.kind,
                    cards_requested=use.cards_requested,
                    cards_used_mean=use.cards_used_mean,
                    cards_charged=use.cards_charged,
                    cost_per_hour=per_hour,
                    cost_window=per_hour * hours,
                    currency=inputs.currency,
                    covered_hours=hours,
                    window_hours=window_hours,
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


def ledger_json(ledger: TenantLedger) -> dict:
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
