"""Where to look first: the hottest, busiest and least healthy cards, the busiest and
unhealthy links — the top N of each from the newest values, each row linked to its page.

Read from the same fleet snapshots as the heatmaps (one frame per metric, shared for a few
seconds); only the N rows shown are looked up in the inventory (one query per list).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inventory.models import Cluster
from telemetry.models import Entity
from telemetry.read import KindSnapshot

TOP_N = 20
HEALTH_LABELS = {1: "healthy", 0: "unhealthy", -1: "unknown"}


@dataclass
class CardRow:
    """One card in a top-N list, with its newest figures (None: not reported)."""

    accelerator_id: int | None
    rack_id: int | None
    card: str  # node hostname / card index, or the entity key
    health: str
    utilization: float | None
    temperature: float | None
    hbm_used_ratio: float | None
    power: float | None


@dataclass
class CardHotspots:
    hottest: list[CardRow]
    busiest: list[CardRow]
    least_healthy: list[CardRow]
    least_healthy_total: int  # every card not reporting healthy, not only the N shown


def _value(array: np.ndarray, i: int) -> float | None:
    value = float(array[i])
    return value if np.isfinite(value) else None


def _top(order_key: np.ndarray, present: np.ndarray, n: int, *ties: np.ndarray) -> np.ndarray:
    """Positions of the ``n`` largest ``order_key`` values among ``present`` ones, largest
    first. Equal values are ranked by each of ``ties`` in turn, largest first (a card without
    that figure last): 20 cards at 74 °C read as a ranking, not a list of equals. Full ties
    keep snapshot (entity id) order, so a refresh does not reshuffle them."""
    at = np.flatnonzero(present)
    # np.lexsort sorts by its last key first and is stable; negated so larger comes first.
    keys = [np.nan_to_num(-tie[at], nan=np.inf) for tie in reversed(ties)]
    order = np.lexsort([*keys, -order_key[at]])
    return at[order[:n]]


def card_hotspots(cluster: Cluster, snap: KindSnapshot, n: int = TOP_N) -> CardHotspots:
    util = snap.get("accelerator_utilization_ratio")
    temp = snap.get("accelerator_temperature_celsius")
    used, total = snap.get("accelerator_hbm_used_bytes"), snap.get("accelerator_hbm_total_bytes")
    power = snap.get("accelerator_power_watts")
    health = snap.get("accelerator_health_status")
    with np.errstate(invalid="ignore", divide="ignore"):
        hbm = np.where(total > 0, used / total, np.nan)
    # Ties broken by the other load figures: the hotter of two equally busy cards draws more.
    hottest = _top(temp, np.isfinite(temp), n, util, power)
    busiest = _top(util, np.isfinite(util), n, power, temp)
    # Not healthy: unhealthy (0) before unknown (-1) before no health figure at all; the
    # hottest first within each.
    sick = np.isfinite(health) & (health != 1)
    rank = np.where(health == 0, 2.0, 1.0)
    severity = rank * 1e4 + np.nan_to_num(temp, nan=-1e3)
    least = _top(severity, sick, n)
    chosen = np.unique(np.concatenate([hottest, busiest, least])).astype(np.int64)
    entity_ids = snap.ids[chosen].tolist()
    rows = {
        pk: (acc, rack, host, index, key)
        for pk, acc, rack, host, index, key in Entity.objects.filter(
            pk__in=entity_ids, cluster=cluster
        ).values_list(
            "pk",
            "accelerator_id",
            "rack_id",
            "accelerator__node__hostname",
            "accelerator__index",
            "key",
        )  # fmt: skip
    }

    def row(i: int) -> CardRow:
        acc, rack, host, index, key = rows.get(int(snap.ids[i]), (None, None, None, None, ""))
        label = f"{host}/{index}" if host is not None else str(key)
        code = _value(health, i)
        return CardRow(
            acc,
            rack,
            label,
            HEALTH_LABELS.get(int(code), "unknown") if code is not None else "unknown",
            _value(util, i),
            _value(temp, i),
            _value(hbm, i),
            _value(power, i),
        )

    return CardHotspots(
        hottest=[row(int(i)) for i in hottest],
        busiest=[row(int(i)) for i in busiest],
        least_healthy=[row(int(i)) for i in least],
        least_healthy_total=int(sick.sum()),
    )
