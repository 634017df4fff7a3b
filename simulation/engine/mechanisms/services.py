"""Inference services: replicas on the card pool, traffic shares, queue backlog, counters.

A replica is ``tp`` consecutive entries of a service's card list; replicas are added and
removed whole, through the card pool. The backlog (requests queued at the end of a step) is
carried to the next step; the last step's latency figures feed the memory pool.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .base import Mechanism
from .cards import CardPool

if TYPE_CHECKING:  # annotations only
    from ..sched.inference import ServiceTable


class Services(Mechanism):
    """Per-service serving state; the only writer of a service's replicas and shares."""

    STATE = (
        "cards",
        "share",
        "new_replicas",
        "low_since",
        "backlog",
        "timeouts_total",
        "last_latency",
    )
    # prompts_truncated: requests cut to the model's context window (serving/requests.py).
    COUNTERS = {"inference_requests": 0.0, "inference_timeouts": 0.0, "prompts_truncated": 0.0}

    def __init__(self, n_services: int) -> None:
        self.cards: list[np.ndarray] = [np.empty(0, np.int64) for _ in range(n_services)]
        self.share = np.ones(n_services)
        self.new_replicas = np.zeros(n_services, dtype=np.int64)
        self.low_since = np.full(n_services, np.nan)  # start of low demand (cooldown)
        self.backlog = np.zeros(n_services)
        self.timeouts_total = np.zeros(n_services)
        self.last_latency: dict[str, np.ndarray] | None = None
        self._new_counters()

    def bind(self, table: ServiceTable, pool: CardPool, n_jobs: int) -> None:
        """Bind the static service table and the card pool (owner ids start at ``n_jobs``)."""
        self.table, self.pool, self.n_jobs = table, pool, n_jobs

    @property
    def n(self) -> int:
        """Number of services."""
        return int(self.share.size)

    def card_counts(self, dtype: Any = float) -> np.ndarray:
        """Cards held per service."""
        return np.array([c.size for c in self.cards], dtype=dtype)

    # -- transitions ------------------------------------------------------------------
    def set_share(self, s: int, share: float) -> None:
        """Route ``share`` (0..1) of service ``s``'s demand to this cluster."""
        if not 0.0 <= share <= 1.0:
            self.fail(f"set_share: share {share} outside [0, 1]")
        self.share[s] = float(share)

    def note_low_demand(self, below: np.ndarray, t: float) -> None:
        """Start (or keep) the scale-down cooldown clock where demand is below the hysteresis."""
        self.low_since = np.where(
            below, np.where(np.isnan(self.low_since), t, self.low_since), np.nan
        )

    def scale_down(self, s: int, keep_cards: int) -> None:
        """Keep the first ``keep_cards`` cards (whole replicas) of service ``s``."""
        if keep_cards % int(self.table.tp[s]):
            self.fail(f"scale_down: {keep_cards} cards is not whole replicas of service {s}")
        cards = self.cards[s]
        self.pool.release(cards[keep_cards:], self.n_jobs + s)
        self.cards[s] = cards[:keep_cards]

    def begin_placement(self) -> None:
        """A new scheduling pass: no replica is new yet."""
        self.new_replicas[:] = 0

    def add_replicas(self, s: int, cards: np.ndarray, count: int) -> None:
        """Add ``count`` replicas on free ``cards`` (they load weights during the step)."""
        if cards.size != count * int(self.table.tp[s]):
            self.fail(f"add_replicas: {cards.size} cards for {count} replicas of service {s}")
        self.pool.allocate(cards, self.n_jobs + s)
        self.cards[s] = np.concatenate([self.cards[s], cards])
        self.new_replicas[s] = count

    def lose_replica(self, s: int, card: int) -> None:
        """Remove the replica of service ``s`` holding failed ``card`` (its traffic fails over)."""
        tp = int(self.table.tp[s])
        cards = self.cards[s]
        q = int(np.flatnonzero(cards == card)[0]) // tp
        group = cards[q * tp : (q + 1) * tp]
        self.pool.release(group, self.n_jobs + s)
        self.cards[s] = np.concatenate([cards[: q * tp], cards[(q + 1) * tp :]])

    def account(self, lat: dict[str, np.ndarray], lam: np.ndarray, dt: float) -> None:
        """Carry the step's backlog and latency; count requests and timeouts."""
        self.backlog = lat["backlog"]
        self.counters["inference_requests"] += float((lam * dt).sum())
        self.counters["inference_timeouts"] += float(lat["timeouts"].sum())
        self.timeouts_total = self.timeouts_total + lat["timeouts"]
        # The shares the step ran at, so the next step can tell an announced share change
        # from a surprise (Engine.step's autoscaler input).
        self.last_latency = {**lat, "share": self.share.copy()}

    def check(self) -> None:
        """Whole replicas only, exactly the cards the pool gives each service; shares in
        [0, 1]; backlog and timeouts non-negative."""
        owner = self.pool.owner
        held = np.bincount(owner[owner >= self.n_jobs] - self.n_jobs, minlength=self.n)
        for s in range(self.n):
            cards = self.cards[s]
            if cards.size % int(self.table.tp[s]):
                self.fail(f"service {s} holds a partial replica ({cards.size} cards)")
            if cards.size != held[s] or (cards.size and (owner[cards] != self.n_jobs + s).any()):
                self.fail(f"service {s}: its cards and the card pool disagree")
        if ((self.share < 0) | (self.share > 1)).any():
            self.fail("a traffic share is outside [0, 1]")
        if (self.backlog < 0).any() or (self.timeouts_total < 0).any():
            self.fail("negative backlog or timeouts")
