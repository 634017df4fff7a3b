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

The state (the caches, the hit-ratio estimate) and the step live in
:class:`..mechanisms.memory.MemoryPool`; this module holds the static sampling model.
"""

from __future__ import annotations

import numpy as np

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
