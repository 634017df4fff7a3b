"""Reads the allocation ledger is built from: per hour, the seconds a cluster's telemetry
covers and the card-seconds each workload held (the maths is in :mod:`cost.ledger`).

Each workload's card-seconds come from one basis, shown next to its bill:

- ``measured``: the workload has a series selector; the attribution intervals it binds (who
  held which card or MIG slice when, from the exporters' pod / Slurm labels) give the
  card-seconds it held, per hour (``telemetry.read.attribution_held_by_hour``).
- ``scheduler``: the twin (or a scheduler push) states the cards each workload held as
  ``workload_allocated_cards``. Each observation of an hour stands for that hour's covered
  seconds ÷ the number of observations the cluster made in it, so card-seconds = Σ cards
  held × that interval. A workload that held no cards writes 0 or nothing, and pays nothing.
- ``requested``: a real cluster's workload with neither — billed its requested cards over the
  covered time, a labelled fallback (the page says the bill is an estimate from the request).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime

import numpy as np

from cost.coverage import covered_by_hour
from cost.ledger import Ledger, build_ledger
from inventory.models import Cluster
from telemetry.models import EntityKind
from telemetry.read import attribution_held_by_hour, entity_hourly_sums, ledger_start

ALLOCATED_CARDS = "workload_allocated_cards"


class Basis:
    """Where a workload's billed card-seconds come from (see the module docstring)."""

    MEASURED = "measured"
    SCHEDULER = "scheduler"
    REQUESTED = "requested"


@dataclass(frozen=True)
class Billable:
    """One workload as the ledger reads it."""

    pk: int
    entity: int | None  # its telemetry entity (scheduler-stated cards)
    selector: str = ""  # its series selector (attribution)
    cards_requested: float = 0.0


def cluster_ledger(
    cluster: Cluster,
    start: datetime,
    end: datetime,
    *,
    per_hour: float,
    cards: int,
    currency: str,
    workloads: list[Billable],
    pad_seconds: float = 0.0,
) -> Ledger:
    """The cluster's ledger over ``[start, end)`` (start aligned as the per-hour read needs);
    its lines are keyed by workload pk, in ``workloads``' order, with their basis.
    ``pad_seconds``: coverage read that far past both ends (``covered_by_hour``)."""
    aligned = ledger_start(start, end)
    coverage = covered_by_hour(cluster, aligned, end, pad_seconds=pad_seconds)
    sums = entity_hourly_sums(
        cluster=cluster,
        metric_name=ALLOCATED_CARDS,
        kind=EntityKind.WORKLOAD,
        start=aligned,
        end=end,
    )
    hours = sorted(coverage)
    held = np.zeros((len(hours), len(workloads)), np.float64)
    if hours and sums.entity_ids.size:
        column = {int(e): i for i, e in enumerate(sums.entity_ids.tolist())}
        row_of = {int(h): i for i, h in enumerate(sums.hours.tolist())}
        picks = [column.get(w.entity, -1) if w.entity is not None else -1 for w in workloads]
        have = np.array([p >= 0 for p in picks], bool)
        cols = np.array([max(p, 0) for p in picks], np.int64)
        for r, hour in enumerate(hours):
            i = row_of.get(hour)
            if i is None:
                continue
            seconds, observations = coverage[hour]
            # The busiest series decides how many observations the hour had.
            n = max(observations, int(sums.counts[i].max(initial=0)))
            if n <= 0 or seconds <= 0:
                continue
            held[r] = np.where(have, sums.sums[i, cols], 0.0) * (seconds / n)
    scheduled = set(sums.entity_ids.tolist()) if sums.entity_ids.size else set()
    basis: dict[int, str] = {}
    selected = [(i, w) for i, w in enumerate(workloads) if w.selector]
    unbound, ambiguous = 0.0, 0
    if selected and hours:
        attributed = attribution_held_by_hour(
            cluster_id=cluster.pk,
            bindings=[(w.pk, w.selector) for _, w in selected],
            start=aligned,
            end=end,
        )
        unbound, ambiguous = attributed.unbound_card_seconds, attributed.ambiguous_intervals
        for r, hour in enumerate(hours):
            row = attributed.for_hour(float(hour))
            if row is not None:
                held[r, [i for i, _ in selected]] = row
    for i, w in enumerate(workloads):
        if w.selector:
            basis[w.pk] = Basis.MEASURED
        elif w.entity is not None and w.entity in scheduled:
            basis[w.pk] = Basis.SCHEDULER
        elif not scheduled and w.cards_requested > 0:
            # No scheduler statement anywhere in this cluster's window: a real cluster whose
            # workload has no selector yet. Its request over the covered time, labelled.
            basis[w.pk] = Basis.REQUESTED
            held[:, i] = [w.cards_requested * coverage[h][0] for h in hours]
        else:
            basis[w.pk] = Basis.SCHEDULER
    ledger = build_ledger(
        per_hour=per_hour,
        cards=cards,
        currency=currency,
        window_seconds=(end - start).total_seconds(),
        hour_starts=[float(h) for h in hours],
        covered_seconds=[coverage[h][0] for h in hours],
        held=held,
        keys=[w.pk for w in workloads],
    )
    return replace(ledger, basis=basis, unbound_card_seconds=unbound, ambiguous_intervals=ambiguous)


def hour_start(line_start: float) -> datetime:
    return datetime.fromtimestamp(line_start, tz=UTC)
