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

from .sched.training import preempt_job

if TYPE_CHECKING:  # annotations only: the engine imports this module
    from .engine import Engine


def step_faults(eng: Engine, dt: float) -> None:
    """Apply repairs and draw new card/link failures for the step ending at ``state.t``."""
    st, fs = eng.state, eng.scenario.faults
    if not fs.enabled:
        return
    t = st.t
    rng = st.np_rng
    for c in [c for c, until in st.failed_until.items() if until <= t]:
        st.health[c] = 1
        del st.failed_until[c]
    for link in [k for k, until in st.link_failed_until.items() if until <= t]:
        st.link_up[link] = True
        del st.link_failed_until[link]
    for link in [k for k, until in st.link_reroute_until.items() if until <= t - dt]:
        del st.link_reroute_until[link]
    n = st.health.size
    k = rng.poisson((n - len(st.failed_until)) * dt / (fs.card_mtbf_hours * 3600.0))
    n_j = eng.jobs.n
    tp = eng.svc.tp
    for c in sorted(set(rng.integers(0, n, size=k).tolist())):
        if st.health[c] == 0:
            continue
        st.health[c] = 0
        st.failed_until[c] = t + fs.card_repair_hours * 3600.0 * (0.5 + rng.random())
        st.counters["card_failures"] += 1
        o = int(st.owner[c])
        if 0 <= o < n_j:
            preempt_job(st, o, fs.restart_overhead_s, "restarts")
        elif o >= n_j:
            s = o - n_j
            cards = st.svc_cards[s]
            q = int(np.flatnonzero(cards == c)[0]) // int(tp[s])
            group = cards[q * tp[s] : (q + 1) * tp[s]]
            st.owner[group] = -1
            st.svc_cards[s] = np.concatenate([cards[: q * tp[s]], cards[(q + 1) * tp[s] :]])
            st.counters["failovers"] += 1
    nl = st.link_up.size
    kl = rng.poisson(int(st.link_up.sum()) * dt / (fs.link_mtbf_hours * 3600.0))
    for link in sorted(set(rng.integers(0, nl, size=kl).tolist())):
        if not st.link_up[link]:
            continue
        st.link_up[link] = False
        st.link_failed_until[link] = t + fs.link_repair_hours * 3600.0 * (0.5 + rng.random())
        st.link_reroute_until[link] = t + fs.reroute_seconds
        st.counters["link_failures"] += 1


def link_effects(eng: Engine, dt: float) -> np.ndarray | None:
    """Per-job communication penalty from degraded uplinks; adds reroute stalls to overheads.

    Returns ``None`` when every link is up (the common case, kept cheap).
    """
    st, idx = eng.state, eng.idx
    if st.link_up.all() and not st.link_reroute_until:
        return None
    up = eng.scenario.topology.uplinks_per_rack
    down = np.bincount(idx.link_rack[~st.link_up], minlength=idx.n_racks)
    degrade = up / np.maximum(up - down, 0.5)
    stall = np.zeros(idx.n_racks)
    for link, until in st.link_reroute_until.items():
        r = idx.link_rack[link]
        stall[r] = max(stall[r], min(dt, until - (st.t - dt)))
    n_j = eng.jobs.n
    penalty = np.ones(n_j)
    hit = (degrade > 1.0) | (stall > 0)
    cards = np.flatnonzero(hit[idx.card_rack] & (st.owner >= 0) & (st.owner < n_j))
    if cards.size:
        jobs = st.owner[cards]
        multi = st.job_racks[jobs] > 1  # in-rack jobs never touch uplinks
        np.maximum.at(penalty, jobs[multi], degrade[idx.card_rack[cards[multi]]])
        st_add = np.zeros(n_j)
        np.maximum.at(st_add, jobs[multi], stall[idx.card_rack[cards[multi]]])
        st.job_overhead = st.job_overhead + st_add
    return penalty
