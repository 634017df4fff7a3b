"""Card and link failures with repair, self-healing reroute, fault domains and failover.

* Cards fail as a Poisson process (rate = healthy cards / MTBF). The fault domain is the card's
  workload: a training job restarts from its last checkpoint (the rest of the cluster is
  untouched); an inference replica is lost and its traffic fails over to the surviving replicas
  for the rest of the step (the scheduler replaces it next step).
* Rack uplinks fail likewise. Traffic through the rack's uplinks stalls for ``reroute_seconds``
  (self-healing), then runs on the surviving uplinks (bandwidth x (up-down)/up) until repair.
  Only jobs spanning racks through that rack are affected: a link failure stays in its rack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .base import Mechanism
from .cards import CardPool
from .jobs import Jobs
from .services import Services

if TYPE_CHECKING:  # annotations only
    from ..scenario.types import Faults, Topology
    from ..topology import TopologyIndex


class FaultState(Mechanism):
    """Repair timers of failed cards, rack-uplink status and reroutes in progress."""

    STATE = ("failed_until", "link_up", "link_failed_until", "link_reroute_until")
    COUNTERS = {"card_failures": 0, "link_failures": 0, "failovers": 0}

    def __init__(self, n_links: int) -> None:
        self.failed_until: dict[int, float] = {}
        self.link_up = np.ones(n_links, dtype=bool)
        self.link_failed_until: dict[int, float] = {}
        self.link_reroute_until: dict[int, float] = {}
        self._new_counters()

    def bind(
        self,
        spec: Faults,
        topo: Topology,
        idx: TopologyIndex,
        pool: CardPool,
        jobs: Jobs,
        services: Services,
    ) -> None:
        """Bind the fault parameters, topology and the mechanisms a failure acts on."""
        self.spec, self.topo, self.idx = spec, topo, idx
        self.pool, self.jobs, self.services = pool, jobs, services

    def step(self, dt: float, t: float, rng: np.random.Generator) -> None:
        """Apply repairs and draw new card/link failures for the step ending at ``t``."""
        fs = self.spec
        if not fs.enabled:
            return
        for c in [c for c, until in self.failed_until.items() if until <= t]:
            self.pool.set_health(c, True)
            del self.failed_until[c]
        for link in [k for k, until in self.link_failed_until.items() if until <= t]:
            self.link_up[link] = True
            del self.link_failed_until[link]
        for link in [k for k, until in self.link_reroute_until.items() if until <= t - dt]:
            del self.link_reroute_until[link]
        health, owner = self.pool.health, self.pool.owner
        n = health.size
        k = rng.poisson((n - len(self.failed_until)) * dt / (fs.card_mtbf_hours * 3600.0))
        n_j = self.jobs.n
        for c in sorted(set(rng.integers(0, n, size=k).tolist())):
            if health[c] == 0:
                continue
            self.pool.set_health(c, False)
            self.failed_until[c] = t + fs.card_repair_hours * 3600.0 * (0.5 + rng.random())
            self.counters["card_failures"] += 1
            o = int(owner[c])
            if 0 <= o < n_j:
                self.jobs.preempt(o, t, fs.restart_overhead_s, "restarts")
            elif o >= n_j:
                self.services.lose_replica(o - n_j, c)
                self.counters["failovers"] += 1
        nl = self.link_up.size
        kl = rng.poisson(int(self.link_up.sum()) * dt / (fs.link_mtbf_hours * 3600.0))
        for link in sorted(set(rng.integers(0, nl, size=kl).tolist())):
            if not self.link_up[link]:
                continue
            repaired = t + fs.link_repair_hours * 3600.0 * (0.5 + rng.random())
            self.fail_link(link, repaired, t + fs.reroute_seconds)

    def fail_link(self, link: int, repaired_at: float, rerouted_at: float) -> None:
        """Take rack uplink ``link`` down until ``repaired_at``; traffic through its rack
        stalls until ``rerouted_at`` (self-healing reroute)."""
        if not self.link_up[link]:
            self.fail(f"fail_link: link {link} is already down")
        self.link_up[link] = False
        self.link_failed_until[link] = repaired_at
        self.link_reroute_until[link] = rerouted_at
        self.counters["link_failures"] += 1

    def link_effects(self, dt: float, t: float) -> np.ndarray | None:
        """Per-job communication penalty from degraded uplinks; adds reroute stalls to the
        jobs' overheads. ``None`` when every link is up (the common case, kept cheap)."""
        if self.link_up.all() and not self.link_reroute_until:
            return None
        idx = self.idx
        up = self.topo.uplinks_per_rack
        down = np.bincount(idx.link_rack[~self.link_up], minlength=idx.n_racks)
        degrade = up / np.maximum(up - down, 0.5)
        stall = np.zeros(idx.n_racks)
        for link, until in self.link_reroute_until.items():
            r = idx.link_rack[link]
            stall[r] = max(stall[r], min(dt, until - (t - dt)))
        n_j = self.jobs.n
        owner = self.pool.owner
        penalty = np.ones(n_j)
        hit = (degrade > 1.0) | (stall > 0)
        cards = np.flatnonzero(hit[idx.card_rack] & (owner >= 0) & (owner < n_j))
        if cards.size:
            jobs = owner[cards]
            multi = self.jobs.racks[jobs] > 1  # in-rack jobs never touch uplinks
            np.maximum.at(penalty, jobs[multi], degrade[idx.card_rack[cards[multi]]])
            st_add = np.zeros(n_j)
            np.maximum.at(st_add, jobs[multi], stall[idx.card_rack[cards[multi]]])
            self.jobs.add_overhead(st_add)
        return penalty

    def rerouting(self, t: float, dt: float) -> np.ndarray:
        """1.0 for each link rerouting during the step ending at ``t`` (else 0.0)."""
        out = np.zeros(self.link_up.size)
        for link, until in self.link_reroute_until.items():
            out[link] = 1.0 if until > t - dt else 0.0
        return out

    def check(self) -> None:
        """Failed cards are exactly those with a repair timer; down links exactly those with
        one; a reroute only on a link that failed."""
        failed = np.flatnonzero(self.pool.health == 0)
        if set(failed.tolist()) != set(self.failed_until):
            self.fail("failed cards and repair timers disagree")
        down = np.flatnonzero(~self.link_up)
        if set(down.tolist()) != set(self.link_failed_until):
            self.fail("down links and repair timers disagree")
        if not set(self.link_reroute_until) <= set(range(self.link_up.size)):
            self.fail("a reroute names an unknown link")
