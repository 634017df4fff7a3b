"""Reads the allocation ledger is built from: per hour, the seconds a cluster's telemetry
covers and the card-seconds each workload held (the maths is in :mod:`cost.ledger`).

A stored ``workload_allocated_cards`` value is the cards a workload held at one observation;
each observation of an hour stands for that hour's covered seconds ÷ the number of
observations the cluster made in it (the twin writes one per step, exporters one per
scrape), so card-seconds = Σ cards held × that interval. A workload that did not hold cards
writes 0 or nothing, and pays nothing for that time.
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from cost.coverage import covered_by_hour
from cost.ledger import Ledger, build_ledger
from inventory.models import Cluster
from telemetry.models import EntityKind
from telemetry.read import entity_hourly_sums, ledger_start

ALLOCATED_CARDS = "workload_allocated_cards"


def cluster_ledger(
    cluster: Cluster,
    start: datetime,
    end: datetime,
    *,
    per_hour: float,
    cards: int,
    currency: str,
    workloads: list[tuple[int, int | None]],
) -> Ledger:
    """The cluster's ledger over ``[start, end)`` (start aligned as the per-hour read needs).

    ``workloads`` are ``(workload pk, telemetry entity pk or None)``; the ledger's lines are
    keyed by workload pk, in that order.
    """
    aligned = ledger_start(start, end)
    coverage = covered_by_hour(cluster, aligned, end)
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
        picks = [column.get(entity, -1) if entity is not None else -1 for _, entity in workloads]
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
    return build_ledger(
        per_hour=per_hour,
        cards=cards,
        currency=currency,
        window_seconds=(end - start).total_seconds(),
        hour_starts=[float(h) for h in hours],
        covered_seconds=[coverage[h][0] for h in hours],
        held=held,
        keys=[pk for pk, _ in workloads],
    )


def hour_start(line_start: float) -> datetime:
    return datetime.fromtimestamp(line_start, tz=UTC)
