"""Card allocation with locality: best-fit supernode first, then first-fit by index.

Cards are numbered in topology order, so taking the lowest free indices keeps a workload inside
as few nodes and racks as possible. A request that fits in one supernode goes to the supernode
with the fewest free cards that still fits (best fit, limits fragmentation of big gaps).
"""

from __future__ import annotations

import numpy as np

from ..topology import TopologyIndex


class FreeList:
    """Sorted free card indices of one pool, consumed by successive ``take`` calls."""

    def __init__(self, owner: np.ndarray, health: np.ndarray, pool: np.ndarray | None,
                 idx: TopologyIndex) -> None:
        mask = (owner < 0) & (health > 0)
        if pool is not None:
            mask &= pool
        self.free = np.flatnonzero(mask)
        self.idx = idx

    def __len__(self) -> int:
        return int(self.free.size)

    def take(self, k: int, compact: bool = True) -> np.ndarray:
        """Remove and return ``k`` free cards (fewer if not available)."""
        k = int(min(k, self.free.size))
        if k <= 0:
            return np.empty(0, np.int64)
        free = self.free
        if compact and k > 1:
            sn = self.idx.card_sn[free]
            counts = np.bincount(sn, minlength=self.idx.n_supernodes)
            fits = np.flatnonzero(counts >= k)
            if fits.size:
                best = fits[np.argmin(counts[fits])]
                lo = np.searchsorted(sn, best, "left")
                chosen = free[lo:lo + k]
                self.free = np.concatenate([free[:lo], free[lo + k:]])
                return chosen
        chosen = free[:k]
        self.free = free[k:]
        return chosen

    def give_back(self, cards: np.ndarray) -> None:
        """Return cards (e.g. released by a preemption) to this free list, keeping it sorted."""
        if cards.size:
            self.free = np.union1d(self.free, cards)
