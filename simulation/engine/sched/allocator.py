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

    def __init__(
        self, owner: np.ndarray, health: np.ndarray, pool: np.ndarray | None, idx: TopologyIndex
    ) -> None:
        mask = (owner < 0) & (health > 0)
        self.pool = pool  # cards this list may hold (None: any)
        if pool is not None:
            mask &= pool
        self.free = np.flatnonzero(mask)
        self.idx = idx
        self._counts: np.ndarray | None = None

    def best_supernode_free(self) -> int:
        """Most free cards available inside a single supernode."""
        if self._counts is None:
            self._counts = np.bincount(self.idx.card_sn[self.free], minlength=self.idx.n_supernodes)
        return int(self._counts.max()) if self._counts.size else 0

    def _taken(self, chosen: np.ndarray) -> np.ndarray:
        if self._counts is not None and chosen.size:
            self._counts -= np.bincount(self.idx.card_sn[chosen], minlength=self.idx.n_supernodes)
        return chosen

    def __len__(self) -> int:
        return int(self.free.size)

    def take(self, k: int, from_end: bool = False) -> np.ndarray:
        """Remove and return ``k`` free cards (fewer if not available).

        ``from_end`` packs from the highest card indices: inference replicas pack from one
        end of the cluster and training gangs from the other, so the two do not interleave
        and gangs stay inside few racks and supernodes.
        """
        k = int(min(k, self.free.size))
        if k <= 0:
            return np.empty(0, np.int64)
        free = self.free
        if k > 1:
            sn = self.idx.card_sn[free]
            counts = np.bincount(sn, minlength=self.idx.n_supernodes)
            fits = np.flatnonzero(counts >= k)
            if fits.size:
                # Best fit: the fullest supernode that still fits (ties: nearest the end used).
                order = np.lexsort((-fits if from_end else fits, counts[fits]))
                best = fits[order[0]]
                if from_end:
                    hi = np.searchsorted(sn, best, "right")
                    lo = hi - k
                else:
                    lo = np.searchsorted(sn, best, "left")
                chosen = free[lo : lo + k]
                self.free = np.concatenate([free[:lo], free[lo + k :]])
                return self._taken(chosen)
        if from_end:
            chosen = free[free.size - k :]
            self.free = free[: free.size - k]
        else:
            chosen = free[:k]
            self.free = free[k:]
        return self._taken(chosen)

    def take_near(self, k: int, cards: np.ndarray) -> np.ndarray:
        """Take up to ``k`` free cards inside the supernodes already holding ``cards``.

        Used for elastic growth: spreading a running job into another supernode would push its
        collectives through the slowest fabric tier (see :mod:`..perf.training`).
        """
        if cards.size == 0:
            return self.take(k)
        sns = np.unique(self.idx.card_sn[cards])
        inside = np.isin(self.idx.card_sn[self.free], sns)
        pick = np.flatnonzero(inside)[:k]
        chosen = self.free[pick]
        if chosen.size:
            keep = np.ones(self.free.size, dtype=bool)
            keep[pick] = False
            self.free = self.free[keep]
        return self._taken(chosen)

    def count_near(self, cards: np.ndarray) -> int:
        """Free cards inside the supernodes already holding ``cards``."""
        sns = np.unique(self.idx.card_sn[cards])
        return int(np.isin(self.idx.card_sn[self.free], sns).sum())

    def give_back(self, cards: np.ndarray) -> None:
        """Return cards (e.g. released by a preemption) to this free list, keeping it sorted."""
        if cards.size:
            self.free = np.union1d(self.free, cards)
            self._counts = None
