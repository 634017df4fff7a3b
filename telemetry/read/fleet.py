"""Fleet figures derived from card samples, for clusters without cluster-level data.

The twin writes cluster scalars (``cluster_*`` under the ``cluster`` entity); a cluster fed by
its own exporters (or read from a PromQL server) reports per card only. For those the fleet
figures a page shows are derived here from the cards' values per time bucket: each card's
mean in the bucket, then summed, averaged or counted over the cards (docs/architecture.md §4).

What cannot be derived from card samples (allocation, throughput, serving latency, the twin's
clock) is not invented: it stays missing and the page says where it would come from.

The reductions are pure; the local store folds its per-bucket aggregates in SQL
(``telemetry.read.local.fleet``), a PromQL source in Python from its range answers
(``telemetry.read.promql.fleet``); both hand :func:`combine` the same ``CardBuckets``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

UTIL = "accelerator_utilization_ratio"
POWER = "accelerator_power_watts"
TEMPERATURE = "accelerator_temperature_celsius"
HBM_USED = "accelerator_hbm_used_bytes"
HBM_TOTAL = "accelerator_hbm_total_bytes"
HEALTH = "accelerator_health_status"
# A card "reports" in a bucket when any of these has a value for it.
PRESENCE = (UTIL, POWER, TEMPERATURE, HBM_USED, HEALTH)
CARD_METRICS = (UTIL, POWER, TEMPERATURE, HBM_USED, HBM_TOTAL, HEALTH)


@dataclass(frozen=True)
class Derivation:
    """How one cluster figure follows from card values: ``reduce`` over the cards of
    ``metric`` (``sum``, ``mean``, ``count`` of reporting cards, ``healthy``: cards whose
    health is 1) or ``ratio``: sum of ``metric`` ÷ sum of ``denominator``."""

    metric: str
    reduce: str
    denominator: str = ""


DERIVED: dict[str, Derivation] = {
    "cluster_cards_total": Derivation(UTIL, "count"),
    "cluster_cards_healthy": Derivation(HEALTH, "healthy"),
    "cluster_utilization_busy_ratio": Derivation(UTIL, "mean"),
    "cluster_power_watts": Derivation(POWER, "sum"),
    "cluster_temperature_celsius_mean": Derivation(TEMPERATURE, "mean"),
    "cluster_hbm_live_ratio": Derivation(HBM_USED, "ratio", HBM_TOTAL),
    "cluster_hbm_used_bytes": Derivation(HBM_USED, "sum"),
}

# Where a figure came from (shown next to it).
SOURCE_TWIN = "twin"
SOURCE_EXPORTERS = "exporters"
SOURCE_DERIVED = "derived"
SOURCE_PROMQL = "promql"
SOURCE_PROMQL_RULES = "promql-rules"


@dataclass
class CardAgg:
    """One metric in one bucket over the cards: how many cards had a value, the sum of their
    per-bucket means, and how many of those means were 1 (health)."""

    cards: int = 0
    total: float = 0.0
    ones: int = 0
    # Read from the PromQL server's recording rules (``cluster_portal:<metric>:sum`` …), not
    # aggregated at query time: the page says so (``SOURCE_PROMQL_RULES``).
    recorded: bool = False

    def add(self, cards: int, total: float, ones: int) -> None:
        self.cards += cards
        self.total += total
        self.ones += ones


# {bucket start (unix seconds): {card metric: CardAgg}}
CardBuckets = dict[int, dict[str, CardAgg]]


def derivable(names) -> list[str]:
    return [name for name in names if name in DERIVED]


def needed_metrics(names) -> list[str]:
    """The card metrics the derived ``names`` need (presence metrics for card counts)."""
    out: set[str] = set()
    for name in derivable(names):
        how = DERIVED[name]
        out.add(how.metric)
        if how.denominator:
            out.add(how.denominator)
        if how.reduce == "count":
            out.update(PRESENCE)
    return sorted(out)


def value_of(how: Derivation, per_metric: dict[str, CardAgg]) -> float | None:
    """The derived figure for one bucket, or ``None`` when its cards reported nothing."""
    if how.reduce == "count":
        counts = [per_metric[m].cards for m in PRESENCE if m in per_metric]
        return float(max(counts)) if counts and max(counts) else None
    agg = per_metric.get(how.metric)
    if agg is None or not agg.cards:
        return None
    if how.reduce == "sum":
        return agg.total
    if how.reduce == "mean":
        return agg.total / agg.cards
    if how.reduce == "healthy":
        return float(agg.ones)
    below = per_metric.get(how.denominator)
    if below is None or not below.total:
        return None
    return agg.total / below.total


def combine(names, buckets: CardBuckets) -> dict[str, list[tuple[int, float]]]:
    """``{derived name: [(bucket start, value), …]}`` in time order."""
    out: dict[str, list[tuple[int, float]]] = {name: [] for name in derivable(names)}
    for at in sorted(buckets):
        for name in out:
            value = value_of(DERIVED[name], buckets[at])
            if value is not None:
                out[name].append((at, value))
    return out


def snapshot_aggs(snapshot) -> dict[str, CardAgg]:
    """Per metric, the sum and count (and ones) of a ``KindSnapshot``'s newest card values."""
    out: dict[str, CardAgg] = {}
    for name, array in snapshot.values.items():
        have = array[~np.isnan(array)]
        if have.size:
            out[name] = CardAgg(int(have.size), float(have.sum()), int((have >= 0.999999).sum()))
    return out


def source_of(default: str, aggs) -> str:
    """``SOURCE_PROMQL_RULES`` when any of ``aggs`` was read from recording rules (the health
    point, which no rule records, is still aggregated live beside them), else ``default``."""
    return SOURCE_PROMQL_RULES if any(agg.recorded for agg in aggs) else default
