"""Writes of the cost model: saving the operator's cost inputs, closing ledger hours."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from django.db import transaction
from django.utils import timezone

from cost.hours import (
    CLOSE_LAG_SECONDS,
    HOUR,
    HourBill,
    Pricing,
    floor_hour,
    hour_bill,
    hours_with_data,
)
from cost.models import CostAssumptions, LedgerHour, LedgerIdleLine, LedgerLine
from cost.selectors import assumptions_for, billables, inputs_of, roster
from inventory.models import Cluster
from telemetry.read import minute_detail_kept_from


@transaction.atomic
def cost_assumptions_save(*, cluster: Cluster | None, values: dict) -> CostAssumptions:
    """Create or update the inputs row of ``cluster`` (``None``: the global default).

    ``values`` must already be validated (the form does it through the model's ``clean``).
    An existing row is locked so concurrent saves apply one after the other; two concurrent
    first saves of one scope are stopped by the unique constraints (the second one fails).
    """
    # order_by("pk"): the default ordering joins the cluster, and PostgreSQL refuses FOR
    # UPDATE on the nullable side of that outer join.
    existing = CostAssumptions.objects.select_for_update().filter(cluster=cluster).order_by("pk")
    row = existing.first() or CostAssumptions(cluster=cluster)
    for name, value in values.items():
        setattr(row, name, value)
    row.full_clean()
    row.save()
    return row


# Late data revises a closed hour only this long after it closed: later samples are kept
# in telemetry but no longer move a bill (the page says when an hour became final).
REVISE_FOR = timedelta(hours=6)


def _differs(row: LedgerHour, bill: HourBill, lines: dict[int | None, tuple[float, int]]) -> bool:
    line = bill.line
    if (row.billed_cents, row.idle_cents, row.allocated_idle_cents) != (
        line.billed_cents,
        line.idle_cents,
        line.allocated_idle_cents,
    ):
        return True
    held_idle = {t: c for t, c in row.idle_lines.values_list("tenant_id", "cents")}
    if held_idle != {t: c for t, c in bill.idle_cents.items() if c}:
        return True
    if not math.isclose(row.covered_seconds, line.covered_seconds, rel_tol=1e-9, abs_tol=1e-6):
        return True
    stored = {
        w: (cs, c)
        for w, cs, c in row.lines.values_list("workload_id", "card_seconds", "billed_cents")
    }
    if stored.keys() != lines.keys():
        return True
    return any(
        stored[k][1] != c or not math.isclose(stored[k][0], cs, rel_tol=1e-9, abs_tol=1e-6)
        for k, (cs, c) in lines.items()
    )


@transaction.atomic
def ledger_hour_record(
    *,
    cluster: Cluster,
    hour: datetime,
    bill: HourBill,
    currency: str,
    cards: int,
    tenants: dict[int, int],
    names: dict[int, str],
    now: datetime,
) -> tuple[LedgerHour, str]:
    """Write one closed hour of ``cluster``'s ledger: create it (``"closed"``), revise it
    when its figures changed (``"revised"``: revision + 1) or leave it (``"unchanged"``).

    One transaction under the cluster's row lock, so two close tasks racing write the hour
    once, and a worker killed mid-write leaves the hour as it was (the next run writes it).
    ``tenants`` / ``names``: each billed workload's tenant id and name (kept on the line)."""
    Cluster.objects.select_for_update().filter(pk=cluster.pk).first()
    lines = {
        pk: (bill.card_seconds.get(pk, 0.0), bill.billed_cents.get(pk, 0))
        for pk in set(bill.card_seconds) | set(bill.billed_cents)
        if pk in tenants
    }
    line = bill.line
    values = {
        "currency": currency,
        "cards": cards,
        "per_hour": bill.per_hour,
        "covered_seconds": min(line.covered_seconds, 3600.0),
        "capacity_card_seconds": line.capacity_card_seconds,
        "held_card_seconds": line.held_card_seconds,
        "cost_cents": line.cost_cents,
        "billed_cents": line.billed_cents,
        "idle_cents": line.idle_cents,
        "allocated_idle_cents": line.allocated_idle_cents,
        "overcommitted": line.overcommitted,
        "unbound_card_seconds": bill.unbound_card_seconds,
        "ambiguous_intervals": bill.ambiguous_intervals,
    }
    row = LedgerHour.objects.filter(cluster=cluster, hour=hour).first()
    if row is not None and not _differs(row, bill, lines):
        return row, "unchanged"
    if row is None:
        row = LedgerHour(cluster=cluster, hour=hour, closed_at=now)
        outcome = "closed"
    else:
        row.revision += 1
        row.revised_at = now
        row.lines.all().delete()
        row.idle_lines.all().delete()
        outcome = "revised"
    for name, value in values.items():
        setattr(row, name, value)
    row.save()
    LedgerLine.objects.bulk_create(
        LedgerLine(
            hour=row,
            workload_id=pk,
            tenant_id=tenants[pk],
            workload_name=names.get(pk, ""),
            basis=bill.basis.get(pk, ""),
            card_seconds=cs,
            billed_cents=c,
        )
        for pk, (cs, c) in lines.items()
    )
    LedgerIdleLine.objects.bulk_create(
        LedgerIdleLine(
            hour=row,
            tenant_id=tenant,
            card_seconds=bill.idle_card_seconds.get(tenant, 0.0),
            cents=bill.idle_cents.get(tenant, 0),
        )
        for tenant in set(bill.idle_card_seconds) | set(bill.idle_cents)
    )
    return row, outcome


def ledger_hours_close(
    *, now: datetime | None = None, clusters: list[Cluster] | None = None
) -> dict[str, int]:
    """Close every ended hour of every cluster into the persisted ledger, and revise the
    hours late data changed while they are within ``REVISE_FOR`` and their minute detail
    is kept. Idempotent: a repeated or concurrent run writes nothing new. Returns counts."""
    now = now or timezone.now()
    counts = {"closed": 0, "revised": 0, "unchanged": 0}
    kept_from = minute_detail_kept_from(now)
    # Only hours whose every minute is still kept can be billed from minute detail.
    earliest = floor_hour(kept_from) + timedelta(
        seconds=HOUR if kept_from.timestamp() % HOUR else 0
    )
    last_closed = floor_hour(now - timedelta(seconds=HOUR + CLOSE_LAG_SECONDS))
    revise_from = max(earliest, floor_hour(now - REVISE_FOR - timedelta(seconds=HOUR)))
    if clusters is None:
        clusters = list(Cluster.objects.select_related("hardware_model"))
    for cluster in clusters:
        found = roster(cluster)
        if not found.cards:
            continue
        inputs = inputs_of(assumptions_for(cluster))
        pricing = Pricing(
            inputs=inputs,
            cards=found.cards,
            tdp_watts=cluster.hardware_model.tdp_watts if cluster.hardware_model_id else None,
        )
        stored = dict(
            LedgerHour.objects.filter(cluster=cluster, hour__gte=earliest).values_list(
                "hour", "per_hour"
            )
        )
        latest = LedgerHour.objects.filter(cluster=cluster).order_by("-hour").first()
        scan_from = earliest
        if latest is not None:
            # A backlog (worker down) is closed from the last closed hour on; revisions
            # reach back ``REVISE_FOR``.
            scan_from = max(earliest, min(latest.hour + timedelta(seconds=HOUR), revise_from))
        if scan_from > last_closed:
            continue
        due = set(hours_with_data(cluster, scan_from, last_closed + timedelta(seconds=HOUR)))
        due |= {h for h in stored if revise_from <= h <= last_closed}
        tenants = {pk: tenant for pk, _n, tenant, *_rest in found.workloads}
        names = {pk: name for pk, name, *_rest in found.workloads}
        workloads = billables(found)
        for hour in sorted(due):
            hour = hour.astimezone(UTC)
            bill = hour_bill(
                cluster,
                hour,
                now=now,
                pricing=pricing,
                workloads=workloads,
                per_hour=stored.get(hour),
            )
            if bill is None:
                continue
            _row, outcome = ledger_hour_record(
                cluster=cluster,
                hour=hour,
                bill=bill,
                currency=inputs.currency,
                cards=found.cards,
                tenants=tenants,
                names=names,
                now=now,
            )
            counts[outcome] += 1
    return counts
