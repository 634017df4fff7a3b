"""The unified memory pool's state: sampled prefix caches (HBM and DRAM tiers), hit ratio.

The model is described in :mod:`..memory.pool`. Per step this mechanism works out per-card
live/reserved HBM and per-supernode aggregates within the current placement, and advances the
sampled prefix caches in batches of at least ``PREFIX_PERIOD_S`` seconds of traffic (or at
once, for :meth:`..engine.Engine.step_memory_pool`). Its hit-ratio estimate (an EMA of the
sample) is what serving and autoscaling read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..memory.cache import LRUCache, make_cache
from ..memory.pool import CHUNK_TOKENS, SAMPLED_REFS_PER_MINUTE, SLICE_BYTES
from ..serving.requests import exact_services
from .base import Mechanism
from .cards import CardPool
from .jobs import Jobs
from .services import Services

if TYPE_CHECKING:  # annotations only
    from ..world import World

PREFIX_PERIOD_S = 300.0  # the sampled prefix caches run every 5 simulated minutes (cost)


class MemoryPool(Mechanism):
    """Prefix caches per service, their pending traffic and the prefix hit-ratio estimate."""

    STATE = ("caches", "dram_caches", "cache_seq", "prefix_pending", "prefix_last", "hit")
    COUNTERS = {
        "kv_lookups": 0,
        "kv_hits": 0,
        "kv_evictions": 0.0,
        "kv_alloc_failures": 0.0,
        "kv_offload_bytes": 0.0,
        "kv_onload_bytes": 0.0,
    }

    def __init__(self, eviction: str, n_services: int, offload: bool) -> None:
        self.caches = [make_cache(eviction, 0) for _ in range(n_services)]
        self.dram_caches = [LRUCache(0) for _ in range(n_services)] if offload else []
        self.cache_seq = 0
        self.prefix_pending = 0.0
        self.prefix_last: dict[str, np.ndarray] | None = None
        self.hit = np.zeros(n_services)  # EMA of the prefix-cache hit ratio per service
        self._new_counters()

    def bind(self, world: World, pool: CardPool, services: Services, jobs: Jobs) -> None:
        """Bind the static tables and the mechanisms whose placement the pool serves."""
        self.world, self.pool, self.services, self.jobs = world, pool, services, jobs

    def step(
        self, seconds: float, rng: np.random.Generator, force_prefix: bool = True
    ) -> dict[str, np.ndarray]:
        """Advance KV/prefix dynamics by ``seconds`` within the current placement.

        Returns per-card HBM figures, per-supernode aggregates (``agg``) and per-service
        KV figures. The prefix caches advance in batches of at least ``PREFIX_PERIOD_S`` of
        traffic unless ``force_prefix`` (cheaper per step, same traffic in total).
        """
        w = self.world
        svc, jt, idx, pol = w.svc, w.jobs, w.idx, w.scenario.policy
        topo = w.scenario.topology
        hbm = float(w.hw.hbm_bytes)
        pooled = w.features.pooled_memory
        ceiling = w.features.pool_hbm_ceiling
        owner, health = self.pool.owner, self.pool.health
        n_s, n_j = svc.n, jt.n
        lat = self.services.last_latency
        rep = self.services.card_counts() // np.maximum(svc.tp, 1)
        cards_s = rep * svc.tp
        inflight = lat["inflight"] if lat else np.zeros(n_s)
        served = lat["served"] if lat else np.zeros(n_s)
        kvb = svc.kv_stored_per_token
        bt = pol.kv_block_tokens
        demand_live = inflight * svc.context * kvb
        demand_alloc = inflight * (svc.context / bt + 0.5) * bt * kvb
        if pooled:
            # The pool lets a replica use HBM up to the allocator's ceiling (pool_hbm_ceiling).
            kv_cap = rep * (svc.tp * hbm * ceiling - svc.m.weight_bytes)
        else:
            kv_cap = rep * svc.kv_room_per_replica
        kv_cap = np.maximum(kv_cap, 0.0)
        ok = np.where(
            demand_alloc > 0, np.minimum(1.0, kv_cap / np.maximum(demand_alloc, 1.0)), 1.0
        )
        failures = served * seconds * (1.0 - ok)
        self.counters["kv_alloc_failures"] += float(failures.sum())
        live_kv, alloc_kv = demand_live * ok, demand_alloc * ok
        prefix_room = np.maximum(kv_cap - alloc_kv, 0.0)
        if not w.features.prefix_reuse:
            prefix_room = np.zeros(n_s)  # no prefix cache: every prompt is prefilled in full
        chunk_bytes = CHUNK_TOKENS * kvb
        n_sn = idx.n_supernodes
        dram_total_sn = idx.nodes_per_sn * topo.host_dram_per_node_bytes
        dram_cap = np.zeros(n_s)
        if self.dram_caches:
            share = cards_s / max(cards_s.sum(), 1.0)
            dram_cap = share * dram_total_sn.sum() * 0.5 / chunk_bytes  # half of DRAM for KV
        if not w.features.prefix_reuse:
            dram_cap = np.zeros(n_s)
        self.prefix_pending += seconds
        if force_prefix or self.prefix_pending >= PREFIX_PERIOD_S or self.prefix_last is None:
            pending = self.prefix_pending
            pr = self._simulate_prefix(pending, served, prefix_room / chunk_bytes, dram_cap, rng)
            pr["hits"] = pr["hits"] * seconds / pending
            pr["lookups"] = pr["lookups"] * seconds / pending
            pr["evictions"] = pr["evictions"] * seconds / pending
            self.prefix_pending = 0.0
            self.prefix_last = pr
        else:
            pr = self.prefix_last
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
            jcards = self.jobs.card_counts()
            j_live = np.minimum(
                0.95 * hbm, jt.state_bytes / np.maximum(jcards, 1.0) + jt.activation_bytes
            )
            w_live[:n_j] = j_live
            w_res[:n_j] = np.minimum(ceiling * hbm, j_live * 1.05) if pooled else ceiling * hbm
        oi = np.where(owner >= 0, owner, n_j + n_s)
        healthy = health > 0
        card_live = np.where(healthy, w_live[oi], 0.0)
        card_res = np.where(healthy, w_res[oi], 0.0)
        card_kv = np.where(healthy, w_kv[oi], 0.0)
        free = np.where(healthy, hbm - card_res, 0.0)
        if pooled:
            stranded = np.where(owner >= 0, np.mod(free, SLICE_BYTES), 0.0)
        else:
            stranded = np.where(owner >= 0, free, 0.0)
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
        so = owner.astype(np.int64) - n_j
        is_s = (so >= 0) & healthy
        m = np.bincount(so[is_s] * n_sn + sn[is_s], minlength=n_s * n_sn).reshape(n_s, n_sn)
        frac = m / np.maximum(m.sum(axis=1, keepdims=True), 1)
        agg["kv_allocated"] = frac.T @ alloc_kv
        agg["kv_internal_frag"] = frac.T @ (alloc_kv - live_kv)
        agg["prefix_cache"] = frac.T @ prefix_hbm
        agg["hits"] = frac.T @ pr["hits"]
        agg["lookups"] = frac.T @ pr["lookups"]
        agg["alloc_failures"] = frac.T @ failures
        agg["evictions"] = frac.T @ pr["evictions"]
        agg["dram_total"] = dram_total_sn.astype(float)
        dram_w = np.zeros(n_sn)
        if w.features.weight_cache:
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

    def _simulate_prefix(
        self,
        seconds: float,
        lam: np.ndarray,
        hbm_cap_chunks: np.ndarray,
        dram_cap_chunks: np.ndarray,
        rng: np.random.Generator,
    ) -> dict[str, np.ndarray]:
        """Run the sampled prefix caches for ``seconds``; update the hit EMA and counters."""
        pm, svc = self.world.prefix, self.world.svc
        n = svc.n
        chunk_bytes = CHUNK_TOKENS * svc.kv_stored_per_token
        hits = np.zeros(n)
        looks = np.zeros(n)
        evict_real = np.zeros(n)
        budget = SAMPLED_REFS_PER_MINUTE * seconds / 60.0
        # Trace-driven services (issue 25): an exact cache that serving/requests.py feeds per
        # request and counts itself; here it only gets its real capacity and reports the
        # step's exact hits to the pool figures.
        exact = exact_services(self.world.scenario, n)
        rates = np.where(exact, 1.0, pm.rate)
        last = self.services.last_latency or {}
        step_s = self.world.scenario.step_seconds
        for s in range(n):
            cache = self.caches[s]
            if exact[s]:
                cache.resize(int(hbm_cap_chunks[s]))
                if self.dram_caches:
                    self.dram_caches[s].resize(int(dram_cap_chunks[s]))
                hits[s] = float(last.get("prefix_hits", np.zeros(n))[s]) * seconds / step_s
                looks[s] = float(last.get("prefix_lookups", np.zeros(n))[s]) * seconds / step_s
                continue
            cache.resize(int(hbm_cap_chunks[s] * pm.rate))
            dram = self.dram_caches[s] if self.dram_caches else None
            if dram is not None:
                dram.resize(int(dram_cap_chunks[s] * pm.rate))
            per_req = pm.rate * (pm.m[s] * pm.p_kept / pm.rate + pm.u[s])  # sampled refs/request
            if lam[s] <= 0 or per_req <= 0:
                continue
            n_real = max(budget / per_req, 1.0)
            n_docs = rng.binomial(int(np.ceil(n_real)), pm.p_kept) if pm.m[s] else 0
            n_uniq = rng.binomial(int(np.ceil(n_real * pm.u[s])), pm.rate)
            docs = np.searchsorted(pm.cdf, rng.random(n_docs)).tolist()
            events = docs + [-1] * int(n_uniq)
            order = rng.permutation(len(events)).tolist()
            h0, l0, e0 = cache.hits, cache.lookups, cache.evictions
            dram_hits = 0
            for i in order:
                d = events[i]
                if d >= 0:
                    keys = [(d, k) for k in range(int(pm.m[s]))]
                else:
                    self.cache_seq += 1
                    keys = [("u", self.cache_seq)]
                for k in keys:
                    if k not in cache and dram is not None and k in dram:
                        dram_hits += 1
                        cache.hits += 1  # served from the DRAM tier: still a prefix hit
                        cache.lookups += 1
                        cache._insert(k)
                    else:
                        cache.access(k)
                for k in cache.drain_evicted():
                    if dram is not None:
                        dram.access(k)
            dh, dl = cache.hits - h0, cache.lookups - l0
            hits[s], looks[s] = dh, dl
            scale = lam[s] * seconds / n_real / pm.rate  # sampled events -> real events
            evict_real[s] = (cache.evictions - e0) * scale
            self.counters["kv_offload_bytes"] += (
                (cache.evictions - e0) * scale * chunk_bytes[s] if dram is not None else 0.0
            )
            self.counters["kv_onload_bytes"] += dram_hits * scale * chunk_bytes[s]
            if dl:
                wgt = min(1.0, dl / 32.0)  # EMA weight grows with evidence in the sample
                self.hit[s] = (1 - wgt) * self.hit[s] + wgt * (dh / dl)
            if dram is not None:
                dram.drain_evicted()
        self.counters["kv_hits"] += float(hits[~exact].sum())
        self.counters["kv_lookups"] += float(looks[~exact].sum())
        self.counters["kv_evictions"] += float(evict_real.sum())
        cached = np.array([len(c) for c in self.caches], dtype=float) / rates * chunk_bytes
        dram_cached = (
            np.array([len(c) for c in self.dram_caches], dtype=float) / rates * chunk_bytes
            if self.dram_caches
            else np.zeros(n)
        )
        return {
            "hits": hits,
            "lookups": looks,
            "cached_bytes": cached,
            "dram_cached_bytes": dram_cached,
            "evictions": evict_real,
        }

    def check(self) -> None:
        """Caches within their capacity; hit ratios in [0, 1]; hits <= lookups; no negative
        pending traffic."""
        for s, cache in enumerate([*self.caches, *self.dram_caches]):
            if len(cache) > max(cache.capacity, 0):
                self.fail(f"cache {s} holds {len(cache)} blocks over its capacity")
        if ((self.hit < 0) | (self.hit > 1)).any():
            self.fail("a prefix hit ratio is outside [0, 1]")
        if self.counters["kv_hits"] > self.counters["kv_lookups"]:
            self.fail("more prefix hits than lookups")
        if self.prefix_pending < 0:
            self.fail("negative pending prefix traffic")
