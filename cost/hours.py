"""The allocation ledger by whole hours: closed hours read from the persisted ledger
(:class:`cost.models.LedgerHour`), the rest computed from kept minute detail.

Why: a bill over "the last 24 hours" used to be recomputed from whatever rollups were still
kept, so it fell as minute rollups were pruned (365.54 → 96.15 USD in four minutes) and a
24 h and a 7-day window billed the same hour differently. Here an hour is billed once, from
its minute detail, by the close task shortly after it ends (:mod:`cost.services`); every
window then *sums* those hours, so the same hour is the same cents through any window, and
billed + idle = cost holds hour by hour and therefore for the window.

An hour of a window is one of (``HourState``):

* **closed** — in the persisted ledger (revised only by late data while its minute detail is
  kept, ``revision`` counts it);
* **closing** — ended but not written yet (the close task runs every minute): computed
  now, the same way the task will;
* **open** — the current hour, so far.

A closed hour that is neither persisted nor still kept as minute detail cannot be billed
honestly; a window that needs one is refused (:class:`WindowNotCovered`), naming the hours
and the retention that pruned them.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from django.utils.formats import date_format
from django.utils.translation import gettext as _

from cost import model as cm
from cost.allocation import Billable, cluster_ledger
from cost.coverage import covered_by_hour
from cost.idle_split import idle_held_seconds
from cost.ledger import CENTS, HourLine, Ledger, WorkloadLine, split_idle
from cost.models import LedgerHour, LedgerIdleLine, LedgerLine
from inventory.models import Cluster
from telemetry.read import cluster_stats, minute_detail_kept_from

HOUR = 3600
# An hour is closed this long after it ends: past the compaction lag (90 s) and the frames'
# close lag, so every minute of it has been written and rolled up.
CLOSE_LAG_SECONDS = 120
# An hour's coverage is read this far into its neighbours, so the stretch between its edge
# and its first / last point counts once (three scrape intervals of a 100 s exporter).
COVERAGE_PAD_SECONDS = 300


class HourState:
    """Where an hour's figures come from (see the module docstring)."""

    CLOSED = "closed"
    CLOSING = "closing"
    OPEN = "open"


class WindowNotCovered(ValueError):
    """A window that needs closed hours nobody persisted and whose minute data is pruned."""

    def __init__(self, message: str, *, hours: list[datetime], kept_from: datetime | None):
        super().__init__(message)
        self.hours = hours
        self.kept_from = kept_from


@dataclass(frozen=True)
class Pricing:
    """What an hour is priced with: the cluster's inputs, cards and TDP (power is the hour's)."""

    inputs: cm.CostInputs
    cards: int
    tdp_watts: float | None


@dataclass(frozen=True)
class HourBill:
    """One hour's ledger: its line and what each workload (key: pk) held and is billed."""

    line: HourLine
    per_hour: float
    card_seconds: dict[Hashable, float] = field(default_factory=dict)
    billed_cents: dict[Hashable, int] = field(default_factory=dict)
    basis: dict[Hashable, str] = field(default_factory=dict)
    unbound_card_seconds: float = 0.0
    ambiguous_intervals: int = 0
    # Allocated idle per holder tenant (id): card-seconds held idle, and cents.
    idle_card_seconds: dict[Hashable, float] = field(default_factory=dict)
    idle_cents: dict[Hashable, int] = field(default_factory=dict)


def floor_hour(at: datetime) -> datetime:
    return datetime.fromtimestamp(at.timestamp() // HOUR * HOUR, tz=UTC)


def is_closed(hour: datetime, now: datetime) -> bool:
    return (now - hour).total_seconds() >= HOUR + CLOSE_LAG_SECONDS


def hour_bill(
    cluster: Cluster,
    hour: datetime,
    *,
    now: datetime,
    pricing: Pricing,
    workloads: list[Billable],
    per_hour: float | None = None,
) -> HourBill | None:
    """The ledger of the hour starting at ``hour`` (up to ``now`` if it is still open), from
    minute detail; ``None`` when the cluster's cost cannot be estimated (no power, no TDP).

    The asset cost is priced at the hour's own measured power (``per_hour`` overrides it: a
    revision keeps the price the hour closed with)."""
    end = min(hour + timedelta(seconds=HOUR), now)
    if end <= hour:
        return None
    if per_hour is None:
        power = cluster_stats(cluster, ["cluster_power_watts"], hour, end)["cluster_power_watts"]
        asset = cm.asset_cost(
            pricing.inputs,
            cards=pricing.cards,
            measured_it_watts=power.mean if power else None,
            tdp_watts=pricing.tdp_watts,
        )
        if asset is None:
            return None
        per_hour = asset.per_hour
    ledger = cluster_ledger(
        cluster,
        hour,
        end,
        per_hour=per_hour,
        cards=pricing.cards,
        currency=pricing.inputs.currency,
        workloads=workloads,
        pad_seconds=COVERAGE_PAD_SECONDS,
    )
    start = hour.timestamp()
    found = [h for h in ledger.hours if h.start == start]
    line = found[0] if found else HourLine(start, 0.0, 0.0, 0.0, 0, 0, False)
    # Idle splits into the holders' (scheduler jobs holding idle cards) and the operator's.
    idle_seconds = idle_held_seconds(cluster, hour, end) if line.idle_cents else {}
    allocated, idle_cents = split_idle(
        idle_cents=line.idle_cents,
        cents_per_card_second=per_hour * CENTS / HOUR / pricing.cards if pricing.cards else 0.0,
        idle_held=idle_seconds,
    )
    line = replace(line, allocated_idle_cents=allocated)
    return HourBill(
        line=line,
        idle_card_seconds={k: v for k, v in idle_seconds.items() if v > 0},
        idle_cents=idle_cents,
        per_hour=per_hour,
        card_seconds={w.key: w.card_seconds for w in ledger.workloads if w.card_seconds > 0},
        billed_cents={w.key: w.billed_cents for w in ledger.workloads if w.billed_cents},
        basis=dict(ledger.basis),
        unbound_card_seconds=ledger.unbound_card_seconds,
        ambiguous_intervals=ledger.ambiguous_intervals,
    )


def hours_with_data(cluster: Cluster, start: datetime, end: datetime) -> list[datetime]:
    """Hours of ``[start, end)`` in which the cluster reported at least one value (any tier).

    Values, not covered seconds: a sparse source's coverage stretches a point's span up to a
    few *typical* intervals, and what is typical depends on the window read — the demo's
    source cluster (one point per seeded plan start, hours apart) covered 2,340 s of an hour
    it never reported in when read over 24 h, and nothing when the close task read that hour
    alone. The close found it empty, the 24 h window found it "unclosed", and once its minute
    data aged out the cost page refused the window. Counting the hour's own values gives one
    answer for every window."""
    if end <= start:
        return []
    found = covered_by_hour(cluster, start, end)
    return [datetime.fromtimestamp(h, tz=UTC) for h, (_s, n) in found.items() if n > 0]


def _stored(cluster: Cluster, start: datetime, end: datetime) -> dict[float, HourBill]:
    rows = list(LedgerHour.objects.filter(cluster=cluster, hour__gte=start, hour__lt=end))
    bills: dict[float, HourBill] = {}
    lines: dict[int, list[tuple[int | None, float, int, str]]] = {}
    for hour_id, *rest in LedgerLine.objects.filter(hour__in=[r.pk for r in rows]).values_list(
        "hour_id", "workload_id", "card_seconds", "billed_cents", "basis"
    ):
        lines.setdefault(hour_id, []).append(tuple(rest))
    idle: dict[int, list[tuple[int, float, int]]] = {}
    for hour_id, *rest in LedgerIdleLine.objects.filter(hour__in=[r.pk for r in rows]).values_list(
        "hour_id", "tenant_id", "card_seconds", "cents"
    ):
        idle.setdefault(hour_id, []).append(tuple(rest))
    for row in rows:
        mine = lines.get(row.pk, [])
        held_idle = idle.get(row.pk, [])
        bills[row.hour.timestamp()] = HourBill(
            line=HourLine(
                start=row.hour.timestamp(),
                covered_seconds=row.covered_seconds,
                capacity_card_seconds=row.capacity_card_seconds,
                held_card_seconds=row.held_card_seconds,
                billed_cents=int(row.billed_cents),
                idle_cents=int(row.idle_cents),
                overcommitted=row.overcommitted,
                state=HourState.CLOSED,
                revision=row.revision,
                allocated_idle_cents=int(row.allocated_idle_cents),
            ),
            per_hour=row.per_hour,
            card_seconds={w: cs for w, cs, _c, _b in mine},
            billed_cents={w: c for w, _cs, c, _b in mine},
            basis={w: b for w, _cs, _c, b in mine},
            unbound_card_seconds=row.unbound_card_seconds,
            ambiguous_intervals=row.ambiguous_intervals,
            idle_card_seconds={t: cs for t, cs, _c in held_idle},
            idle_cents={t: c for t, _cs, c in held_idle},
        )
    return bills


def refusal_message(hours: list[datetime], kept_from: datetime) -> str:
    first, last = hours[0], hours[-1] + timedelta(seconds=HOUR)
    resume = floor_hour(kept_from) + timedelta(seconds=HOUR)
    return _(
        "The window needs the hours %(first)s to %(last)s, which the ledger never closed, and "
        "their minute data is pruned (minute detail is kept from %(kept)s on). Choose a window "
        "starting at %(resume)s or later."
    ) % {
        "first": date_format(first, "Y-m-d H:i"),
        "last": date_format(last, "Y-m-d H:i"),
        "kept": date_format(kept_from, "Y-m-d H:i"),
        "resume": date_format(resume, "Y-m-d H:i"),
    }


def window_ledger(
    cluster: Cluster,
    start: datetime,
    end: datetime,
    *,
    now: datetime,
    pricing: Pricing,
    workloads: list[Billable],
) -> Ledger:
    """The cluster's ledger over the whole hours ``[start, end)`` touches (none after
    ``now``): persisted closed hours, the rest from kept minute detail (labelled by
    ``HourLine.state``). Raises
    :class:`WindowNotCovered` for closed hours that are neither persisted nor kept."""
    first = floor_hour(start)
    stop = min(end, now)
    stored = _stored(cluster, first, stop)
    kept_from = minute_detail_kept_from(now)
    bills: list[HourBill] = list(stored.values())
    pending = [
        h for h in hours_with_data(cluster, first, stop) if h.timestamp() not in stored and h < stop
    ]
    pruned = [h for h in pending if is_closed(h, now) and h < kept_from]
    if pruned:
        raise WindowNotCovered(
            refusal_message(pruned, kept_from), hours=pruned, kept_from=kept_from
        )
    for hour in pending:
        bill = hour_bill(cluster, hour, now=now, pricing=pricing, workloads=workloads)
        if bill is None:
            continue  # neither power telemetry nor a TDP this hour: nothing to price
        ended = (now - hour).total_seconds() >= HOUR
        state = HourState.CLOSING if ended else HourState.OPEN
        bills.append(replace(bill, line=replace(bill.line, state=state)))
    return ledger_of_hours(
        sorted(bills, key=lambda b: b.line.start),
        keys=[w.pk for w in workloads],
        cards=pricing.cards,
        currency=pricing.inputs.currency,
        window_seconds=(end - start).total_seconds(),
        start=first.timestamp(),
    )


def ledger_of_hours(
    bills: list[HourBill],
    *,
    keys: list[Hashable],
    cards: int,
    currency: str,
    window_seconds: float,
    start: float,
) -> Ledger:
    """A window's ledger as the sum of its hours (cents added, never re-rounded), one line
    per workload of ``keys`` plus any workload a persisted hour billed that is gone now."""
    order = list(keys)
    for bill in bills:
        order.extend(k for k in bill.card_seconds if k not in order)
        order.extend(k for k in bill.billed_cents if k not in order)
    seconds = dict.fromkeys(order, 0.0)
    cents = dict.fromkeys(order, 0)
    basis: dict[Hashable, str] = {}
    for bill in bills:
        for key, value in bill.card_seconds.items():
            seconds[key] += value
        for key, value in bill.billed_cents.items():
            cents[key] += value
        basis.update({k: b for k, b in bill.basis.items() if b})
    covered = sum(b.line.covered_seconds for b in bills)
    cost = sum(b.line.cost_cents for b in bills)
    idle_held: dict[Hashable, tuple[float, int]] = {}
    for bill in bills:
        for tenant in set(bill.idle_card_seconds) | set(bill.idle_cents):
            seconds_so_far, cents_so_far = idle_held.get(tenant, (0.0, 0))
            idle_held[tenant] = (
                seconds_so_far + bill.idle_card_seconds.get(tenant, 0.0),
                cents_so_far + bill.idle_cents.get(tenant, 0),
            )
    return Ledger(
        currency=currency,
        cards=cards,
        per_hour=(cost / 100.0) / (covered / HOUR) if covered else 0.0,
        window_seconds=window_seconds,
        covered_seconds=covered,
        cost_cents=cost,
        workloads=[
            WorkloadLine(key=k, card_seconds=seconds[k], billed_cents=cents[k]) for k in order
        ],
        hours=[b.line for b in bills],
        basis=basis,
        unbound_card_seconds=sum(b.unbound_card_seconds for b in bills),
        ambiguous_intervals=sum(b.ambiguous_intervals for b in bills),
        start=start,
        idle_held=idle_held,
    )
