"""Unified memory pool per supernode: HBM + host-DRAM tiers, paged KV, prefix cache.

What is modelled (per step, or per :meth:`Engine.step_memory_pool` call):

* **Weights**: each replica keeps its TP shard in HBM (decode needs full HBM bandwidth). Under
  ``unified`` one copy per model per supernode also sits in the host-DRAM tier, shared by all
  replicas of that model there (fast scale-out without reading storage).
* **KV cache**: live sequences (Little's law: in-flight = throughput x latency) hold
  ``context`` tokens in blocks of ``kv_block_tokens``; the half-empty last block of each sequence
  is internal fragmentation. ``split`` reserves a fixed fraction of each card's HBM up front
  (vLLM style); ``unified`` reserves what is allocated plus a small headroom, so reserved bytes
  track live bytes. Live bytes are always reported separately from reserved bytes.
* **Prefix cache** (512-token chunks, Mooncake granularity): a *sampled* cache per service
  (SHARDS-style spatial sampling, Waldspurger et al. 2015): a fixed subset of prefix documents
  and unique chunks with rate ``R`` is simulated through a real LRU / LRU-K cache of capacity
  ``R x`` the real chunk capacity; hit ratio is unbiased, counts are scaled back by ``1/R``.
  Under ``unified`` with ``kv_offload`` evicted chunks spill to a DRAM tier (offload traffic)
  and DRAM hits are brought back (onload traffic).
* **Training** state: 16 B/parameter sharded over the job's cards plus activations.
* **Fragmentation**: internal = allocated-but-empty KV block bytes / allocated KV bytes;
  external = free HBM stranded on allocated cards (unusable by others without pooling; with
  pooling only the remainder below a 1 GiB slice) / all free HBM.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .cache import LRUCache, make_cache

if TYPE_CHECKING:  # annotations only: the engine imports this module
    from ..engine import Engine


CHUNK_TOKENS = 512
PREFIX_DOCS = 20_000  # assumed universe of reusable prefix documents per service
SAMPLED_DOCS = 256  # documents kept by the spatial sampling
SAMPLED_REFS_PER_MINUTE = 3  # sampled chunk references simulated per service per minute
ZIPF_ALPHA = 0.8
SLICE_BYTES = float(2**30)


class PrefixModel:
    """Static per-service parameters of the sampled prefix-cache simulation."""

    def __init__(self, prompt: np.ndarray, prefix_share: np.ndarray) -> None:
        self.rate = SAMPLED_DOCS / PREFIX_DOCS
        self.m = np.maximum(np.ceil(prompt * prefix_share / CHUNK_TOKENS), 1).astype(np.int64)
        self.m = np.where(prefix_share > 0, self.m, 0)
        self.u = np.ceil(prompt * (1 - prefix_share) / CHUNK_TOKENS).astype(np.int64)
        # Systematic sample of document ranks (offset half a stride to avoid always keeping
        # rank 0); popularity restricted to the kept docs.
        stride = PREFIX_DOCS / SAMPLED_DOCS
        ranks = np.floor(np.arange(SAMPLED_DOCS) * stride + stride / 2) + 1
        all_w = np.arange(1, PREFIX_DOCS + 1, dtype=float) ** -ZIPF_ALPHA
        kept_w = ranks**-ZIPF_ALPHA
        self.p_kept = float(kept_w.sum() / all_w.sum())
        self.cdf = np.cumsum(kept_w) / kept_w.sum()


def new_caches(policy: str, n: int, offload: bool) -> tuple[list, list]:
    """One HBM prefix cache per service (+ a DRAM-tier LRU cache when offloading)."""
    hbm = [make_cache(policy, 0) for _ in range(n)]
    dram = [LRUCache(0) for _ in range(n)] if offload else []
    return hbm, dram


def simulate_prefix(
    eng: Engine,
    seconds: float,
    lam: np.ndarray,
    hbm_cap_chunks: np.ndarray,
    dram_cap_chunks: np.ndarray,
) -> dict[str, np.ndarray]:
    """Run the sampled prefix caches for ``seconds``; update hit EMA and counters."""
    st, pm, svc = eng.state, eng.prefix, eng.svc
    rng = st.np_rng
    n = svc.n
    chunk_bytes = CHUNK_TOKENS * svc.m.kv_bytes_per_token
    hits = np.zeros(n)
    looks = np.zeros(n)
    evict_real = np.zeros(n)
    budget = SAMPLED_REFS_PER_MINUTE * seconds / 60.0
    for s in range(n):
        cache = st.caches[s]
        cache.resize(int(hbm_cap_chunks[s] * pm.rate))
        dram = st.dram_caches[s] if st.dram_caches else None
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
                st.cache_seq += 1
                keys = [("u", st.cache_seq)]
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
        st.counters["kv_offload_bytes"] += (
            (cache.evictions - e0) * scale * chunk_bytes[s] if dram is not None else 0.0
        )
        st.counters["kv_onload_bytes"] += dram_hits * scale * chunk_bytes[s]
        if dl:
            w = min(1.0, dl / 32.0)  # EMA weight grows with evidence in the sample
            st.svc_hit[s] = (1 - w) * st.svc_hit[s] + w * (dh / dl)
        if dram is not None:
            dram.drain_evicted()
    st.counters["kv_hits"] += float(hits.sum())
    st.counters["kv_lookups"] += float(looks.sum())
    st.counters["kv_evictions"] += float(evict_real.sum())
    cached = np.array([len(c) for c in st.caches], dtype=float) / pm.rate * chunk_bytes
    dram_cached = (
        np.array([len(c) for c in st.dram_caches], dtype=float) / pm.rate * chunk_bytes
        if st.dram_caches
        else np.zeros(n)
    )
    return {
        "hits": hits,
        "lookups": looks,
        "cached_bytes": cached,
        "dram_cached_bytes": dram_cached,
        "evictions": evict_real,
    }
