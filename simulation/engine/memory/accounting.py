"""Per-card HBM figures and per-supernode pool aggregates (see :mod:`.pool` for the model)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .pool import SLICE_BYTES, simulate_prefix

if TYPE_CHECKING:  # annotations only: the engine imports this module
    from ..engine import Engine


PREFIX_PERIOD_S = 300.0  # the sampled prefix caches run every 5 simulated minutes (cost)


def memory_step(eng: Engine, seconds: float, force_prefix: bool = True) -> dict[str, np.ndarray]:
    """Advance KV/prefix dynamics by ``seconds`` within the current placement; return arrays.

    The sampled prefix caches are advanced in batches of at least ``PREFIX_PERIOD_S`` seconds
    of traffic unless ``force_prefix`` (cheaper per step, same traffic in total).
    """
    st, svc, jt, idx, pol = eng.state, eng.svc, eng.jobs, eng.idx, eng.scenario.policy
    topo = eng.scenario.topology
    hbm = float(eng.hw.hbm_bytes)
    pooled = eng.features.pooled_memory
    ceiling = eng.features.pool_hbm_ceiling
    n_s, n_j = svc.n, jt.n
    lat = eng.last_latency
    rep = np.array([c.size for c in st.svc_cards], dtype=float) // np.maximum(svc.tp, 1)
    cards_s = rep * svc.tp
    inflight = lat["inflight"] if lat else np.zeros(n_s)
    served = lat["served"] if lat else np.zeros(n_s)
    kvb = svc.m.kv_bytes_per_token
    bt = pol.kv_block_tokens
    demand_live = inflight * svc.context * kvb
    demand_alloc = inflight * (svc.context / bt + 0.5) * bt * kvb
    if pooled:
        # The pool lets a replica use HBM up to the allocator's ceiling (pool_hbm_ceiling).
        kv_cap = rep * (svc.tp * hbm * ceiling - svc.m.weight_bytes)
    else:
        kv_cap = rep * svc.kv_room_per_replica
    kv_cap = np.maximum(kv_cap, 0.0)
    ok = np.where(demand_alloc > 0, np.minimum(1.0, kv_cap / np.maximum(demand_alloc, 1.0)), 1.0)
    failures = served * seconds * (1.0 - ok)
    st.counters["kv_alloc_failures"] += float(failures.sum())
    live_kv, alloc_kv = demand_live * ok, demand_alloc * ok
    prefix_room = np.maximum(kv_cap - alloc_kv, 0.0)
    if not eng.features.prefix_reuse:
        prefix_room = np.zeros(n_s)  # no prefix cache: every prompt is prefilled in full
    chunk_bytes = 512 * kvb
    n_sn = idx.n_supernodes
    dram_total_sn = idx.nodes_per_sn * topo.host_dram_per_node_bytes
    dram_cap = np.zeros(n_s)
    if st.dram_caches:
        share = cards_s / max(cards_s.sum(), 1.0)
        dram_cap = share * dram_total_sn.sum() * 0.5 / chunk_bytes  # half of DRAM for KV
    if not eng.features.prefix_reuse:
        dram_cap = np.zeros(n_s)
    st.prefix_pending = getattr(st, "prefix_pending", 0.0) + seconds
    if force_prefix or st.prefix_pending >= PREFIX_PERIOD_S or st.prefix_last is None:
        pr = simulate_prefix(eng, st.prefix_pending, served, prefix_room / chunk_bytes, dram_cap)
        pr["hits"] = pr["hits"] * seconds / st.prefix_pending
        pr["lookups"] = pr["lookups"] * seconds / st.prefix_pending
        pr["evictions"] = pr["evictions"] * seconds / st.prefix_pending
        st.prefix_pending = 0.0
        st.prefix_last = pr
    else:
        pr = st.prefix_last
    prefix_hbm = np.minimum(pr["cached_bytes"], prefix_room)

    # Per-workload per-card figures; index n_j + n_s is "free card".
    w_live = np.zeros(n_j + n_s + 1)
    w_res = np.zeros(n_j + n_s + 1)
    w_kv = np.zeros(n_j + n_s + 1)
    safe_cards = np.maximum(cards_s, 1.0)
    s_live = svc.weights_per_card + live_kv / safe_cards
    if pooled:
        s_res = np.minimum(
            ceiling * hbm, svc.weights_per_card + (alloc_kv + prefix_hbm) / safe_cards * 1.05
        )
    else:
        s_res = np.full(n_s, pol.reserve_fraction_split * hbm)
    w_live[n_j : n_j + n_s] = s_live
    w_res[n_j : n_j + n_s] = np.maximum(s_res, s_live)
    w_kv[n_j : n_j + n_s] = live_kv / safe_cards
    if n_j:
        jcards = np.array([c.size for c in st.job_cards], dtype=float)
        j_live = np.minimum(
            0.95 * hbm, jt.state_bytes / np.maximum(jcards, 1.0) + jt.activation_bytes
        )
        w_live[:n_j] = j_live
        w_res[:n_j] = np.minimum(ceiling * hbm, j_live * 1.05) if pooled else ceiling * hbm
    oi = np.where(st.owner >= 0, st.owner, n_j + n_s)
    healthy = st.health > 0
    card_live = np.where(healthy, w_live[oi], 0.0)
    card_res = np.where(healthy, w_res[oi], 0.0)
    card_kv = np.where(healthy, w_kv[oi], 0.0)
    free = np.where(healthy, hbm - card_res, 0.0)
    if pooled:
        stranded = np.where(st.owner >= 0, np.mod(free, SLICE_BYTES), 0.0)
    else:
        stranded = np.where(st.owner >= 0, free, 0.0)
    sn = idx.card_sn
    agg = {
        "hbm_total": np.bincount(sn, weights=np.where(healthy, hbm, 0.0), minlength=n_sn),
        "hbm_reserved": np.bincount(sn, weights=card_res, minlength=n_sn),
        "hbm_live": np.bincount(sn, weights=card_live, minlength=n_sn),
        "kv_live": np.bincount(sn, weights=card_kv, minlength=n_sn),
        "stranded": np.bincount(sn, weights=stranded, minlength=n_sn),
        "free": np.bincount(sn, weights=free, minlength=n_sn),
    }
    # Service x supernode card counts spread service-level figures onto supernodes.
    so = st.owner.astype(np.int64) - n_j
    is_s = (so >= 0) & healthy
    m = np.bincount(so[is_s] * n_sn + sn[is_s], minlength=n_s * n_sn).reshape(n_s, n_sn)
    frac = m / np.maximum(m.sum(axis=1, keepdims=True), 1)
    kv_alloc_sn = frac.T @ alloc_kv
    agg["kv_allocated"] = kv_alloc_sn
    agg["kv_internal_frag"] = frac.T @ (alloc_kv - live_kv)
    agg["prefix_cache"] = frac.T @ prefix_hbm
    agg["hits"] = frac.T @ pr["hits"]
    agg["lookups"] = frac.T @ pr["lookups"]
    agg["alloc_failures"] = frac.T @ failures
    agg["evictions"] = frac.T @ pr["evictions"]
    agg["dram_total"] = dram_total_sn.astype(float)
    dram_w = np.zeros(n_sn)
    if eng.features.weight_cache:
        present = m > 0
        for model_id in sorted(set(svc.model_ids)):
            sel = np.array([mi == model_id for mi in svc.model_ids])
            wb = svc.m.weight_bytes[sel][0]
            dram_w += present[sel].any(axis=0) * wb
    agg["dram_weights"] = np.minimum(dram_w, dram_total_sn)
    agg["dram_used"] = np.minimum(
        agg["dram_weights"] + frac.T @ pr["dram_cached_bytes"], dram_total_sn
    )
    return {
        "card_live": card_live,
        "card_reserved": card_res,
        "agg": agg,
        "svc_live_kv": live_kv,
        "svc_alloc_kv": alloc_kv,
        "svc_failures": failures,
        "svc_prefix_hbm": prefix_hbm,
    }
