"""The allocation ledger: a cluster's cost over a window, split into what each workload held
and idle capacity, in whole cents that add up (pure NumPy, no Django).

OpenCost's rule, per allocation interval: a workload pays max(request, usage) of the cards
for the seconds it held them. The portal's telemetry states the cards each workload *held*
in every interval (``workload_allocated_cards``: the scheduler's grant, so usage of whole
cards cannot exceed it), so the card-seconds billed are the sum over intervals of the cards
held times the interval — a workload that held one card for one minute of an hour pays one
card-minute, never its whole request for the whole hour.

Per hour of the window:

* the cluster's cost is its hourly asset cost × the seconds its telemetry covers (time
  without telemetry is neither billed nor called idle; pages state the coverage);
* its capacity is cards × covered seconds; an hour whose workloads held more card-seconds
  than that (double-attributed cards, clock skew) is capped pro rata and flagged, so a
  ledger never bills more than the cluster cost;
* each workload pays the hour's cost × its card-seconds ÷ capacity; idle is the rest.

Rounding: the window's cost and its billed part are each rounded to the cent once (idle is
their difference); the workloads' and the hours' shares are apportioned to those totals by
largest remainder, so billed + idle = cost exactly and every line is within a cent of its
exact share.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

CENTS = 100


def apportion(values: np.ndarray, total: int) -> np.ndarray:
    """Whole units for non-negative ``values`` summing to ``total`` (largest remainder).

    ``values`` are scaled to ``total`` first, so each result is the floor or the ceiling of
    its exact share; zero values stay zero. ``total`` must be 0 when every value is 0.
    """
    values = np.clip(np.asarray(values, np.float64), 0.0, None)
    exact = values.sum()
    if total <= 0 or exact <= 0:
        if total > 0:
            raise ValueError("a positive total cannot be apportioned to nothing")
        return np.zeros(values.shape, np.int64)
    share = values / exact * total
    whole = np.floor(share).astype(np.int64)
    left = int(total - whole.sum())
    if left > 0:
        remainder = np.where(values > 0, share - whole, -1.0)
        # Stable order: ties go to the earlier line, so a ledger reads the same every time.
        whole[np.argsort(-remainder, kind="stable")[:left]] += 1
    return whole


@dataclass(frozen=True)
class HourLine:
    """One hour of the ledger (``start``: epoch seconds)."""

    start: float
    covered_seconds: float
    capacity_card_seconds: float
    held_card_seconds: float  # as measured, before any cap
    billed_cents: int
    idle_cents: int
    overcommitted: bool
    # ``cost.hours.HourState``: closed (read from the persisted ledger), closing (ended,
    # not yet written by the close task: computed from kept minute data) or open (so far).
    state: str = "closed"
    revision: int = 0  # how many times late data revised this closed hour
    # The part of ``idle_cents`` on cards a scheduler job held while they read idle
    # (:func:`split_idle`); the rest of idle is unallocated, the operator's.
    allocated_idle_cents: int = 0

    @property
    def cost_cents(self) -> int:
        return self.billed_cents + self.idle_cents

    @property
    def unallocated_idle_cents(self) -> int:
        return self.idle_cents - self.allocated_idle_cents


@dataclass(frozen=True)
class WorkloadLine:
    """What one workload held over the window and what it is billed for it."""

    key: Hashable
    card_seconds: float  # held, after any over-commitment cap
    billed_cents: int

    @property
    def card_hours(self) -> float:
        return self.card_seconds / 3600.0


@dataclass(frozen=True)
class Ledger:
    """Billed + idle = cost, in cents, for one cluster and window."""

    currency: str
    cards: int
    per_hour: float
    window_seconds: float
    covered_seconds: float
    cost_cents: int
    workloads: list[WorkloadLine]
    hours: list[HourLine]
    # What each workload's card-seconds come from (``cost.allocation.Basis``), and on real
    # clusters the attributed time no workload claimed or several did (billed to none).
    basis: dict[Hashable, str] = field(default_factory=dict)
    unbound_card_seconds: float = 0.0
    ambiguous_intervals: int = 0
    start: float | None = None  # the first hour billed (whole hours: ``cost.hours``)
    # Allocated idle per holder tenant (id): ``(card-seconds held idle, cents)``.
    idle_held: dict[Hashable, tuple[float, int]] = field(default_factory=dict)

    @property
    def closed_hours(self) -> int:
        return sum(1 for h in self.hours if h.state == "closed")

    @property
    def revised_hours(self) -> int:
        return sum(1 for h in self.hours if h.revision)

    @property
    def open_hours(self) -> list[HourLine]:
        """Hours not (yet) in the persisted ledger: the current one and any still closing."""
        return [h for h in self.hours if h.state != "closed"]

    @property
    def billed_cents(self) -> int:
        return sum(w.billed_cents for w in self.workloads)

    @property
    def idle_cents(self) -> int:
        return self.cost_cents - self.billed_cents

    @property
    def allocated_idle_cents(self) -> int:
        return sum(h.allocated_idle_cents for h in self.hours)

    @property
    def unallocated_idle_cents(self) -> int:
        return self.idle_cents - self.allocated_idle_cents

    @property
    def held_card_seconds(self) -> float:
        return sum(w.card_seconds for w in self.workloads)

    @property
    def mean_cards_held(self) -> float | None:
        """Cards held on average over the covered time (``None`` without coverage)."""
        if self.covered_seconds <= 0:
            return None
        return self.held_card_seconds / self.covered_seconds

    @property
    def idle_share(self) -> float | None:
        return self.idle_cents / self.cost_cents if self.cost_cents else None

    @property
    def overcommitted_hours(self) -> int:
        return sum(1 for h in self.hours if h.overcommitted)

    def line(self, key: Hashable) -> WorkloadLine | None:
        return next((w for w in self.workloads if w.key == key), None)


def build_ledger(
    *,
    per_hour: float,
    cards: int,
    currency: str,
    window_seconds: float,
    hour_starts: Sequence[float],
    covered_seconds: Sequence[float],
    held: np.ndarray,
    keys: Sequence[Hashable],
) -> Ledger:
    """The ledger of one cluster: ``held[h, w]`` card-seconds workload ``keys[w]`` held in the
    hour starting at ``hour_starts[h]``, of which ``covered_seconds[h]`` had telemetry.

    ``per_hour`` is the cluster's asset cost per hour (all ``cards``), in ``currency``.
    """
    held = np.clip(np.asarray(held, np.float64).reshape(len(hour_starts), len(keys)), 0.0, None)
    covered = np.clip(np.asarray(covered_seconds, np.float64), 0.0, None)
    cards = max(int(cards), 0)
    per_hour = max(float(per_hour), 0.0)
    capacity = cards * covered
    cost = per_hour * covered / 3600.0
    measured = held.sum(axis=1)
    # Over-committed hours are capped pro rata: never more card-seconds than the cluster had.
    scale = np.ones_like(measured)
    over = measured > capacity * (1 + 1e-9)
    scale[over] = np.divide(capacity[over], measured[over])
    charged = held * scale[:, None]
    rate = np.divide(cost, capacity, out=np.zeros_like(cost), where=capacity > 0)
    billed_exact = charged * rate[:, None]  # money per workload per hour
    billed_hour = billed_exact.sum(axis=1)
    idle_hour = np.clip(cost - billed_hour, 0.0, None)
    total = round(float(cost.sum()) * CENTS)
    billed_total = min(round(float(billed_hour.sum()) * CENTS), total)
    billed_cents_hour = apportion(billed_hour * CENTS, billed_total)
    # Idle by hour: its exact shares, or (float dust only) the hours' costs.
    idle_weights = idle_hour if idle_hour.sum() > 0 else cost
    idle_cents_hour = apportion(idle_weights * CENTS, total - billed_total)
    by_workload = apportion(billed_exact.sum(axis=0) * CENTS, billed_total)
    card_seconds = charged.sum(axis=0)
    return Ledger(
        currency=currency,
        cards=cards,
        per_hour=per_hour,
        window_seconds=float(window_seconds),
        covered_seconds=float(covered.sum()),
        cost_cents=int(total),
        workloads=[
            WorkloadLine(key=k, card_seconds=float(cs), billed_cents=int(c))
            for k, cs, c in zip(keys, card_seconds.tolist(), by_workload.tolist(), strict=True)
        ],
        hours=[
            HourLine(
                start=float(start),
                covered_seconds=float(covered[i]),
                capacity_card_seconds=float(capacity[i]),
                held_card_seconds=float(measured[i]),
                billed_cents=int(billed_cents_hour[i]),
                idle_cents=int(idle_cents_hour[i]),
                overcommitted=bool(over[i]),
            )
            for i, start in enumerate(hour_starts)
        ],
    )


def split_idle(
    *, idle_cents: int, cents_per_card_second: float, idle_held: dict[Hashable, float]
) -> tuple[int, dict[Hashable, int]]:
    """An hour's idle cents split into *allocated idle* — the card-seconds each holder
    (tenant) held while the cards read idle, at the hour's rate — and the rest, unallocated.

    The allocated part is rounded to the cent once and never exceeds ``idle_cents`` (a card
    a workload was also billed for is not charged twice: the excess stays billed), and is
    apportioned to the holders by largest remainder, so allocated + unallocated = idle and
    billed + allocated idle + unallocated idle = cost, to the cent."""
    keys = [k for k, seconds in idle_held.items() if seconds > 0]
    if idle_cents <= 0 or not keys or cents_per_card_second <= 0:
        return 0, {}
    exact = np.array([idle_held[k] for k in keys], np.float64) * cents_per_card_second
    allocated = min(round(float(exact.sum())), int(idle_cents))
    shares = apportion(exact, allocated)
    return allocated, {k: int(c) for k, c in zip(keys, shares.tolist(), strict=True) if c}
