"""The scheduler's allocation showback reconciled with the card-seconds the ledger measured.

Two independent figures per cluster, tenant and UTC day: the card-hours the scheduler
*allocated* (``scheduling.selectors.showback``: synced jobs' start/end × granted cards) and
the card-hours the cost ledger *billed from telemetry* (``cost.selectors.cluster_cost``: the
exporters' attribution intervals, or the twin's stated cards), and their difference, always
shown. A tenant-day the ledger has no telemetry-based line for says "no measured data" rather
than a zero; a workload the ledger bills only from its request is an estimate, not a
measurement, and is left out of the measured side (its card-hours are named on the row).

This module lives in ``cost`` because only ``cost`` may read both the ledger and the
scheduler (docs/architecture.md §1: cost sits above scheduling); it reads the ledger only
through :func:`cost.selectors.cluster_cost` and changes none of its maths.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from django.utils import timezone

from accounts.models import Tenant
from accounts.selectors.scoping import principal_sees_all
from cost.allocation import Basis
from cost.selectors import cluster_cost
from inventory.models import Cluster
from scheduling.selectors.showback import AllocationRow, allocation_by_day, month_totals

MEASURED_BASES = (Basis.MEASURED, Basis.SCHEDULER)


@dataclass
class Measured:
    """What the ledger billed one cluster's tenants on one day (card-seconds by tenant slug
    and basis), or why it has nothing for that day (``refusal``)."""

    by_tenant: dict[str, dict[str, float]] = field(default_factory=dict)
    estimated: dict[str, float] = field(default_factory=dict)  # requested-basis card-seconds
    refusal: str = ""


@dataclass(frozen=True)
class ReconciledDay:
    """One cluster × tenant × day: allocated vs measured card-hours."""

    cluster: str
    tenant: str
    tenant_name: str
    day: date
    allocated_card_seconds: float
    measured_card_seconds: float | None  # None: no measured data
    bases: tuple[str, ...] = ()  # the ledger bases the measured side comes from
    estimated_card_seconds: float = 0.0  # the ledger's request-based estimate, not counted
    note: str = ""  # why there is no measured figure, when the ledger said

    @property
    def allocated_card_hours(self) -> float:
        return self.allocated_card_seconds / 3600.0

    @property
    def measured_card_hours(self) -> float | None:
        s = self.measured_card_seconds
        return None if s is None else s / 3600.0

    @property
    def difference_card_hours(self) -> float | None:
        """Allocated minus measured (positive: the scheduler granted more than was measured)."""
        m = self.measured_card_hours
        return None if m is None else self.allocated_card_hours - m

    @property
    def difference_share(self) -> float | None:
        m = self.measured_card_seconds
        if m is None or m <= 0:
            return None
        return (self.allocated_card_seconds - m) / m


@dataclass
class SchedulerShowback:
    """A period's allocation showback (daily and totals) and its daily reconciliation."""

    start: datetime
    end: datetime
    days: list[AllocationRow]
    totals: list[AllocationRow]
    reconciliation: list[ReconciledDay]


def _days(start: datetime, end: datetime) -> list[datetime]:
    out, at = [], start
    while at < end:
        out.append(at)
        at += timedelta(days=1)
    return out


def measured_day(cluster: Cluster, day: datetime, *, now: datetime) -> Measured:
    """The ledger's card-seconds per tenant on one cluster and UTC day."""
    cost = cluster_cost(cluster, day, day + timedelta(days=1), now=now)
    if cost.ledger is None:
        return Measured(refusal=cost.refusal)
    found = Measured()
    for use in cost.workloads:
        if use.basis in MEASURED_BASES:
            bases = found.by_tenant.setdefault(use.tenant, {})
            bases[use.basis] = bases.get(use.basis, 0.0) + use.card_seconds
        elif use.card_seconds:
            found.estimated[use.tenant] = found.estimated.get(use.tenant, 0.0) + use.card_seconds
    return found


def scheduler_showback(
    user, start: datetime, end: datetime, *, now: datetime | None = None
) -> SchedulerShowback:
    """The allocation showback of ``[start, end)`` for ``user`` (customers: their tenant),
    each tenant-day reconciled with the ledger of the clusters that have a scheduler."""
    now = now or timezone.now()
    days = allocation_by_day(user, start, end, now=now)
    allocated: dict[tuple[str, str, date], float] = defaultdict(float)
    names: dict[str, str] = {}
    for row in days:
        allocated[(row.cluster, row.tenant, row.day)] += row.card_seconds
        names[row.tenant] = row.tenant_name
    if principal_sees_all(user):
        visible = Tenant.objects.all()
    else:  # the tenant rule of accounts.selectors.scoping: own tenant, or nothing
        own = getattr(user, "tenant_id", None)
        visible = Tenant.objects.filter(pk=own) if own else Tenant.objects.none()
    names.update(dict(visible.values_list("slug", "name")))
    allowed = set(visible.values_list("slug", flat=True))
    clusters = Cluster.objects.filter(scheduler_source__isnull=False).select_related(
        "hardware_model"
    )
    out: list[ReconciledDay] = []
    for cluster in clusters.order_by("name"):
        for day in _days(start, min(end, now)):
            measured = measured_day(cluster, day, now=now)
            tenants = {t for (c, t, d) in allocated if c == cluster.name and d == day.date()}
            tenants |= set(measured.by_tenant) & allowed
            for tenant in sorted(tenants & allowed):
                bases = measured.by_tenant.get(tenant)
                held = allocated.get((cluster.name, tenant, day.date()), 0.0)
                out.append(
                    ReconciledDay(
                        cluster=cluster.name,
                        tenant=tenant,
                        tenant_name=names.get(tenant, tenant),
                        day=day.date(),
                        allocated_card_seconds=held,
                        measured_card_seconds=sum(bases.values()) if bases else None,
                        bases=tuple(sorted(bases)) if bases else (),
                        estimated_card_seconds=measured.estimated.get(tenant, 0.0),
                        note=measured.refusal,
                    )
                )
    return SchedulerShowback(
        start=start, end=end, days=days, totals=month_totals(days), reconciliation=out
    )
