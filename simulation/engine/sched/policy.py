"""The ``split`` and ``unified`` scheduling passes (one per step).

This is the only module that looks at ``Policy.name``: it decides the placement rule
(partitioned or one shared pool) and the default feature set (:data:`FEATURE_PRESETS`). Every
mechanism (time-sharing, preemption, elastic training, pooled memory, weight cache, prefix
reuse) is a :class:`..scenario.features.Features` flag the rest of the engine reads through
:func:`features_of`, so an ablation can switch each one on its own.

``split``: a static partition. The inference pool is sized for the services' peak demand plus
SLO headroom (or ``Policy.inference_pool_fraction``); replicas autoscale inside it and idle
inference cards stay idle. Training jobs only use the training pool and are never preempted by
inference.

``unified``: one pool. Inference replicas follow demand plus SLO headroom, core services first;
when cards are short, training gives them back: elastic jobs shrink to their minimum first, then
whole gangs are preempted (lowest priority, most recently started first) and lose the work since
their last checkpoint. Training takes everything else, elastically. With a night window,
non-core services run at a higher target occupancy at night, freeing cards for training.

Both policies place gangs inside one supernode when they fit, and otherwise wait up to
``Policy.locality_wait_s`` for a compact slot before accepting a spread placement (delay
scheduling); inference packs from the opposite end of the card range.
A core service is never starved by training: it can always reclaim training cards.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..scenario.features import Features
from .allocator import FreeList

if TYPE_CHECKING:  # annotations only
    from ..state import EngineState
    from ..world import World


# Which mechanisms each placement rule enables when ``Policy.features`` is None.
FEATURE_PRESETS = {
    "split": Features(),
    "unified": Features(
        time_sharing=True, preemption=True, elastic=True, pooled_memory=True, weight_cache=True
    ),
}


def shared_pool(pol) -> bool:
    """Placement rule: one pool for training and inference (else a static partition)."""
    return pol.name == "unified"


def features_of(pol) -> Features:
    """The effective features: explicit ``Policy.features`` or the placement's preset.

    The legacy switches ``Policy.elastic``, ``Policy.preemption`` and ``Policy.kv_offload``
    (default true) can still turn a mechanism off.
    """
    f = pol.features if pol.features is not None else FEATURE_PRESETS[pol.name]
    if not (pol.elastic and pol.preemption):
        f = Features(
            **{
                **f.__dict__,
                "elastic": f.elastic and pol.elastic,
                "preemption": f.preemption and pol.preemption,
            }
        )
    return f


def in_window(hour: float, window: tuple[float, float] | None) -> bool:
    """True when ``hour`` lies in the (possibly midnight-wrapping) window."""
    if window is None:
        return False
    a, b = window
    return (a <= hour < b) if a <= b else (hour >= a or hour < b)


def schedule(w: World, st: EngineState, lam: np.ndarray, hour: float) -> None:
    """Place inference replicas and training jobs for the coming step."""
    svc, jt, idx, pol = w.svc, w.jobs, w.idx, w.scenario.policy
    cards, jobs, services = st.cards, st.jobs, st.services
    feat = w.features
    unified = shared_pool(pol)
    n_j = jt.n
    t = st.t
    tu = np.full(svc.n, pol.target_utilization)
    night = feat.time_sharing and in_window(hour, pol.night_window)
    if night:
        tu = np.where(svc.core, tu, pol.night_target_utilization)
    target = svc.target_replicas(lam, st.memory.hit, tu)
    if not unified:
        # A static partition keeps the replicas tenants reserved for their peak, idle or not
        # (how fleets run today); the shared pool follows demand and lends the rest. With
        # time-sharing, non-core reservations are released for the night window.
        target = np.maximum(target, np.where(night & ~svc.core, 0, svc.reserved))
    current = services.card_counts(np.int64) // svc.tp
    # Scale down only when clearly over-provisioned (hysteresis avoids churn).
    below = target < np.floor(current * pol.scale_down_hysteresis)
    # ...and only after demand stayed low for scale_down_delay_s (cooldown): releasing a
    # replica that is needed again a minute later would preempt training for nothing.
    services.note_low_demand(below, t)
    low_since = services.low_since
    shrink = below & (t - np.nan_to_num(low_since, nan=t) >= pol.scale_down_delay_s)
    want = np.where(shrink, target, np.maximum(target, current))
    for s in np.flatnonzero(want < current):
        services.scale_down(int(s), int(want[s] * svc.tp[s]))
    # Submissions and traffic-share changes for training.
    jobs.submit_arrivals(t)
    for j in np.flatnonzero((jobs.state == 2) & ~jobs.active):
        jobs.preempt(int(j), t, 0.0, "resizes")
    lent = None
    if not unified and feat.time_sharing:
        # Time-sharing on a partition: lent inference cards come back when the window ends
        # (a scheduled drain: checkpoint first, so no work is lost).
        on_pool = (
            np.array([c.size > 0 and bool(w.infer_pool[c].any()) for c in jobs.cards], dtype=bool)
            if n_j
            else np.zeros(0, bool)
        )
        lent = on_pool
        if not night:
            for j in np.flatnonzero(on_pool & (jobs.state == 2)):
                jobs.drain(int(j), t, w.scenario.faults.restart_overhead_s)
            lent = np.zeros(n_j, dtype=bool)
    if unified:
        free_inf = FreeList(cards.owner, cards.health, None, idx)
        free_tr = free_inf
    else:
        free_inf = FreeList(cards.owner, cards.health, w.infer_pool, idx)
        free_tr = FreeList(cards.owner, cards.health, ~w.infer_pool, idx)
    services.begin_placement()
    for s in svc.order:
        tp = int(svc.tp[s])
        need = int(want[s] - services.cards[s].size // tp)
        if need <= 0:
            continue
        if len(free_inf) < need * tp and feat.preemption and (unified or lent is not None):
            _reclaim(w, st, free_inf, need * tp - len(free_inf), None if unified else lent)
        k = min(need, len(free_inf) // tp)
        if k <= 0:
            continue
        got = np.concatenate([free_inf.take(tp, from_end=True) for _ in range(k)])
        services.add_replicas(int(s), got, k)
    if night and not unified:
        # Idle inference-partition cards join the training free list for the night.
        free_tr = FreeList(cards.owner, cards.health, None, idx)
    _place_training(w, st, free_tr)


def _reclaim(w: World, st: EngineState, free: FreeList, short: int, candidates=None) -> None:
    """Free at least ``short`` training cards: shrink elastic jobs, then preempt gangs.

    ``candidates`` (bool per job) restricts the victims (partitioned placement: jobs on lent
    inference cards); their cards are returned to ``free`` only where ``free`` accepts them.
    """
    jt, pol, jobs = w.jobs, w.scenario.policy, st.jobs
    running = np.flatnonzero(jobs.state == 2)
    if candidates is not None:
        running = running[candidates[running]]
    if running.size == 0:
        return
    # Victims: lowest priority first, then most recently queued (least sunk work) first.
    victims = running[np.lexsort((-jobs.queued_since[running], jt.priority[running]))]
    got = 0
    pool = free.pool
    if w.features.elastic:
        for j in victims:
            if got >= short:
                break
            have = jobs.cards[j].size
            g = int(jt.granule[j])
            spare = have - int(jt.min_cards[j])
            if spare < g:
                continue
            give = min(spare, ((short - got + g - 1) // g) * g)
            out = jobs.shrink(int(j), have - give, pol.resize_overhead_s)
            out = out if pool is None else out[pool[out]]
            free.give_back(out)
            got += out.size
    for j in victims:
        if got >= short:
            break
        if jobs.state[j] != 2:
            continue
        out = jobs.preempt(int(j), st.t, w.scenario.faults.restart_overhead_s, "preemptions")
        out = out if pool is None else out[pool[out]]
        free.give_back(out)
        got += out.size


def _place_training(w: World, st: EngineState, free: FreeList) -> None:
    """Grow elastic jobs, then admit queued jobs (priority, FIFO, with backfill)."""
    jt, idx, pol, jobs = w.jobs, w.idx, w.scenario.policy, st.jobs
    elastic = w.features.elastic
    t = st.t
    budget = [PRIORITY_PREEMPTS_PER_STEP]
    waiting = bool(((jobs.state == 1) & jobs.active).any())
    # Only queued (admitted) jobs and running elastic ones can change here; the rest of a
    # day's jobs (finished, not yet submitted) are skipped in one mask (step cost), in order.
    cand = (jobs.state == 1) & jobs.active
    if elastic:
        cand |= jobs.state == 2
    # Jobs this pass starts: sized again later in the same pass (a job behind them shrinks
    # them), they are launched at that size, so no resize is paid for it.
    launched = np.zeros(jt.n, dtype=bool)
    for j in jt.order[cand[jt.order]]:
        if len(free) == 0 and budget[0] <= 0:
            break  # a full pool is only worth walking while queued jobs may still preempt
        g = int(jt.granule[j])
        if jobs.state[j] == 1 and jobs.active[j]:
            avail = len(free)
            one_sn = free.best_supernode_free() if avail else 0
            if jt.min_cards[j] <= one_sn:
                avail = one_sn  # keep the gang inside one supernode when it can be
            elif (
                jt.min_cards[j] <= idx.topo.cards_per_supernode
                and t - jobs.queued_since[j] < pol.locality_wait_s
            ):
                continue  # delay scheduling: wait a while for a compact slot
            top = int(jt.max_cards[j]) if elastic else int(jt.min_cards[j])
            size = min(top, (avail // g) * g)
            if size < jt.min_cards[j]:
                # Elastic growth is lent, not owned: a queued job takes it back first (a
                # resize, no work lost), then may preempt lower priorities after a wait.
                pw = pol.priority_preempt_wait_s
                may_preempt = (
                    pw is not None and jt.priority[j] > 0 and t - jobs.queued_since[j] >= pw
                )
                if budget[0] <= 0 or not (elastic or may_preempt):
                    continue
                budget[0] -= 1  # each attempt counts (bounds the step's cost)
                if elastic and _shrink_for(w, st, free, int(j), launched):
                    size = min(top, (len(free) // g) * g)
                elif not may_preempt or not _priority_preempt(w, st, free, int(j)):
                    continue  # backfill: smaller jobs behind may still fit
                else:
                    size = min(top, (len(free) // g) * g)
            jobs.start(int(j), free.take(size), t)
            launched[j] = True
        elif jobs.state[j] == 2 and elastic and not waiting:
            # No elastic growth while jobs queue: it would take the cards they wait for.
            have = jobs.cards[j].size
            room = int(jt.max_cards[j]) - have
            if room < g:
                continue
            near = free.count_near(jobs.cards[j])
            grow = min(room, (near // g) * g)
            # Resizing costs a restart, so only grow by a meaningful step (>= 25% or to max).
            if grow >= g and (grow == room or grow >= 0.25 * have):
                jobs.grow(int(j), free.take_near(grow, jobs.cards[j]), pol.resize_overhead_s)


# Queued jobs that may try to take back elastic growth or preempt lower priorities in one
# step (bounds the step's cost).
PRIORITY_PREEMPTS_PER_STEP = 8


def _priority_preempt(w: World, st: EngineState, free: FreeList, j: int) -> bool:
    """Free room for queued job ``j`` by preempting running jobs of lower priority.

    Only once ``j`` has waited ``Policy.priority_preempt_wait_s`` and only when the
    lower-priority jobs hold enough cards this free list may use; victims are the lowest
    priority first, then the most recently started (the least work since a checkpoint is
    lost first). Returns True when ``free`` now holds ``j``'s minimum.
    """
    jt, jobs, pol = w.jobs, st.jobs, w.scenario.policy
    if st.t - jobs.queued_since[j] < pol.priority_preempt_wait_s or jt.priority[j] <= 0:
        return False
    running = np.flatnonzero((jobs.state == 2) & (jt.priority < jt.priority[j]))
    if running.size == 0:
        return False
    pool = free.pool
    usable = np.array(
        [jobs.cards[v].size if pool is None else int(pool[jobs.cards[v]].sum()) for v in running]
    )
    short = int(jt.min_cards[j]) - len(free)
    if usable.sum() < short:
        return False  # preempting everything below it would still not fit it: keep waiting
    order = np.lexsort((-jobs.queued_since[running], jt.priority[running]))
    got = 0
    for v, u in zip(running[order], usable[order], strict=True):
        if got >= short:
            break
        if u == 0:
            continue
        overhead = w.scenario.faults.restart_overhead_s
        out = jobs.preempt(int(v), st.t, overhead, "priority_preemptions")
        free.give_back(out if pool is None else out[pool[out]])
        got += int(u)
    return len(free) >= jt.min_cards[j]


def _shrink_for(w: World, st: EngineState, free: FreeList, j: int, launched: np.ndarray) -> bool:
    """Shrink elastic jobs of no higher priority than queued job ``j`` toward their minimum
    until ``free`` holds ``j``'s minimum (only if they can give enough). True on success.

    A job in ``launched`` started in this same pass and has not run a step: the scheduler
    settles its size before the launch, so shrinking it costs no resize (a resize is a
    checkpoint-restore of a running job; charging one here stalled a job for its first two
    minutes on every cold start, which the training model's expectation rightly ignores)."""
    jt, jobs, pol = w.jobs, st.jobs, w.scenario.policy
    run = np.flatnonzero((jobs.state == 2) & (jt.priority <= jt.priority[j]))
    if run.size == 0:
        return False
    pool = free.pool
    spare = np.array([jobs.cards[v].size for v in run]) - jt.min_cards[run]
    g = jt.granule[run]
    spare = (spare // g) * g
    short = int(jt.min_cards[j]) - len(free)
    if spare.sum() < short:
        return False  # shrinking every one of them would still not fit it
    got = 0
    for v in run[np.argsort(-spare, kind="stable")]:
        if got >= short:
            break
        have = jobs.cards[v].size
        give = int(min(have - jt.min_cards[v], ((short - got + jt.granule[v] - 1)
                                                // jt.granule[v]) * jt.granule[v]))  # fmt: skip
        if give <= 0:
            continue
        overhead = 0.0 if launched[v] else pol.resize_overhead_s
        out = jobs.shrink(int(v), have - give, overhead)
        out = out if pool is None else out[pool[out]]
        free.give_back(out)
        got += out.size
    return len(free) >= jt.min_cards[j]
