"""Replay a Mooncake prefix trace through an LRU or LRU-K block cache (``kvcache`` command)."""

from __future__ import annotations

from ..traces import MooncakeRequest
from .cache import make_cache


def replay_blocks(requests: list[MooncakeRequest], capacity_blocks: int, policy: str) -> dict:
    """Hit ratio and evictions when each request references its ``hash_ids`` in order.

    A request's blocks are pinned while it is admitted, so it never evicts its own prefix.
    """
    cache = make_cache(policy, capacity_blocks)
    for r in sorted(requests, key=lambda r: r.timestamp_ms):
        cache.access_request(r.hash_ids)
    return {
        "policy": policy,
        "capacity_blocks": capacity_blocks,
        "requests": len(requests),
        "lookups": cache.lookups,
        "hits": cache.hits,
        "hit_ratio": cache.hit_ratio,
        "evictions": cache.evictions,
        "insert_failures": cache.insert_failures,
    }
