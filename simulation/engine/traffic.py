"""Rack-uplink traffic: each card's cross-rack flow is hashed onto one live uplink (ECMP).

A card of a training job that spans racks pushes ``comm_share x (1 - 1/racks)`` of its
bandwidth across its rack's boundary (the collective's cross-rack share), times the rack's
oversubscription (``inter_rack_convergence``). Switches spread flows over the rack's uplinks
by hashing the flow's header (equal-cost multi-path); a flow stays on its link, so links of
one rack carry *different* loads: two heavy flows that hash to the same uplink saturate it
while its neighbour idles (Al-Fares et al., "Hedera: Dynamic Flow Scheduling for Data Center
Networks", NSDI'10, measure ECMP hash collisions costing up to 61% of bisection bandwidth).
The flow key is (card, owner): stable while a job holds a card, re-hashed when the card
changes hands; a failed uplink drops out of the hash and its flows move to the survivors.

The rack's mean over its live uplinks is unchanged by the hashing: the rack's offered load
over the surviving capacity. Pure function of its inputs (no random draw), so a snapshot
stays a pure read of the state.
"""

from __future__ import annotations

import numpy as np

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def flow_hash(card: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser of (card, owner): a well-mixed, deterministic 64-bit flow hash."""
    with np.errstate(over="ignore"):
        x = card.astype(np.uint64) * _GOLDEN + owner.astype(np.int64).astype(np.uint64)
        x ^= x >> np.uint64(30)
        x *= _M1
        x ^= x >> np.uint64(27)
        x *= _M2
        x ^= x >> np.uint64(31)
    return x


def uplink_utilisation(
    card_rack: np.ndarray,
    card_owner: np.ndarray,
    card_load: np.ndarray,
    link_rack: np.ndarray,
    link_up: np.ndarray,
    rack_cards: np.ndarray,
    uplinks_per_rack: int,
) -> np.ndarray:
    """Utilisation (0..1) of every rack uplink; 0 on a link that is down.

    ``card_load`` is each card's cross-rack traffic in units of its share of the rack's
    uplink capacity (one uplink carries ``rack_cards / uplinks_per_rack`` cards' worth).
    Cards of a rack with every uplink down send nothing (their traffic stalls).
    """
    n_links = link_rack.size
    n_racks = rack_cards.size
    live = np.flatnonzero(link_up)
    n_live = np.bincount(link_rack[live], minlength=n_racks)
    start = np.cumsum(n_live) - n_live  # first live link of each rack in ``live``
    send = np.flatnonzero((card_load > 0) & (n_live[card_rack] > 0))
    util = np.zeros(n_links)
    if send.size:
        rack = card_rack[send]
        slot = flow_hash(send, card_owner[send]) % n_live[rack].astype(np.uint64)
        link = live[start[rack] + slot.astype(np.int64)]
        per_link_cards = np.maximum(rack_cards[rack], 1) / uplinks_per_rack
        util = np.bincount(link, weights=card_load[send] / per_link_cards, minlength=n_links)
    return np.where(link_up, np.minimum(util, 1.0), 0.0)
