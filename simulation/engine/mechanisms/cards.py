"""The card pool: who owns each card and whether it is healthy.

Owners are ``-1`` (free), ``0..J-1`` (training job ``j``) or ``J + s`` (service ``s``).
:meth:`CardPool.allocate` only takes free healthy cards and :meth:`CardPool.release` only
frees cards of the owner named, so a double allocation or a stray free fails at once.
"""

from __future__ import annotations

import numpy as np

from .base import Mechanism

FREE = -1


class CardPool(Mechanism):
    """Ownership and health of every card (the one place either changes)."""

    STATE = ("owner", "health")

    def __init__(self, n_cards: int) -> None:
        self.owner = np.full(n_cards, FREE, dtype=np.int32)
        self.health = np.ones(n_cards, dtype=np.int8)
        self._new_counters()
        self.n_owners = 0  # bound: jobs + services

    def bind(self, n_owners: int) -> None:
        """Bind the number of possible owners (jobs + services) for the bounds checks."""
        self.n_owners = n_owners

    @property
    def n(self) -> int:
        """Number of cards."""
        return int(self.owner.size)

    def allocate(self, cards: np.ndarray, owner: int) -> None:
        """Give free healthy ``cards`` to ``owner``; refuses any other card."""
        if owner < 0 or owner >= self.n_owners:
            self.fail(f"allocate: owner {owner} out of range")
        if cards.size:
            taken = self.owner[cards] != FREE
            if taken.any():
                c = int(cards[np.flatnonzero(taken)[0]])
                self.fail(f"allocate: card {c} already owned by {int(self.owner[c])}")
            if (self.health[cards] == 0).any():
                self.fail("allocate: a failed card cannot be allocated")
        self.owner[cards] = owner

    def release(self, cards: np.ndarray, owner: int) -> None:
        """Free ``cards`` held by ``owner``; refuses cards ``owner`` does not hold."""
        if cards.size and (self.owner[cards] != owner).any():
            self.fail(f"release: owner {owner} does not hold every card it frees")
        self.owner[cards] = FREE

    def set_health(self, card: int, healthy: bool) -> None:
        """Mark a card failed (0) or repaired (1)."""
        self.health[card] = 1 if healthy else 0

    def check(self) -> None:
        """Owners are in range, health is 0/1, and no failed card is owned."""
        if self.owner.size and (self.owner.min() < FREE or self.owner.max() >= self.n_owners):
            self.fail("an owner is out of range")
        if not np.isin(self.health, (0, 1)).all():
            self.fail("health must be 0 or 1")
        if ((self.owner >= 0) & (self.health == 0)).any():
            self.fail("a failed card is still owned")
