"""Block caches for prefix (KV) reuse: LRU baseline and LRU-K (O'Neil, O'Neil & Weikum 1993).

Both caches count hits, misses, evictions and insert failures, and honour pins: a pinned block
(in use by a running request) is never evicted. Keys are any hashable block ids.

LRU-K eviction (K = 2 by default): a block with fewer than K references goes first (LRU among
those); otherwise the block whose K-th most recent reference is oldest (largest backward
K-distance) is evicted. As in the paper, reference history of evicted blocks is retained for a
while (bounded to ``capacity`` entries), so a block re-fetched soon after eviction is not
treated as new. The "correlated reference period" of the paper is not modelled (each access is
one reference).
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from collections.abc import Hashable, Iterable


class BlockCache:
    """Common counters and the request-level access helper shared by both policies."""

    policy = "base"

    def __init__(self, capacity: int) -> None:
        if capacity < 0:
            raise ValueError(f"capacity must be >= 0 (got {capacity})")
        self.capacity = int(capacity)
        self.hits = 0
        self.lookups = 0
        self.evictions = 0
        self.insert_failures = 0
        self.pins: dict[Hashable, int] = {}
        self.evicted: list[Hashable] = []  # since last drain; used for offload accounting

    # -- subclass interface ---------------------------------------------------------
    def __len__(self) -> int:  # pragma: no cover - overridden
        raise NotImplementedError

    def __contains__(self, key: Hashable) -> bool:  # pragma: no cover - overridden
        raise NotImplementedError

    def _touch(self, key: Hashable) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def _insert(self, key: Hashable) -> bool:  # pragma: no cover - overridden
        raise NotImplementedError

    def _evict_one(self) -> bool:  # pragma: no cover - overridden
        raise NotImplementedError

    def resize(self, capacity: int) -> None:
        """Change capacity, evicting (unpinned) blocks until the cache fits."""
        self.capacity = max(int(capacity), 0)
        while len(self) > self.capacity and self._evict_one():
            pass

    # -- shared ---------------------------------------------------------------------
    def access(self, key: Hashable) -> bool:
        """Reference one block; insert it on a miss. Returns True on a hit."""
        self.lookups += 1
        if key in self:
            self.hits += 1
            self._touch(key)
            return True
        if not self._insert(key):
            self.insert_failures += 1
        return False

    def pin(self, key: Hashable) -> None:
        """Mark a block in use (never evicted while pinned)."""
        self.pins[key] = self.pins.get(key, 0) + 1

    def unpin(self, key: Hashable) -> None:
        """Release one pin."""
        n = self.pins.get(key, 0) - 1
        if n <= 0:
            self.pins.pop(key, None)
        else:
            self.pins[key] = n

    def access_request(self, keys: Iterable[Hashable]) -> int:
        """Reference a request's blocks in order, pinning them while the request is admitted.

        Returns the number of hits. Pins are released afterwards (the engine models requests
        as finishing within the step).
        """
        keys = list(keys)
        hits = 0
        for k in keys:
            hits += self.access(k)
            self.pin(k)
        for k in keys:
            self.unpin(k)
        return hits

    def drain_evicted(self) -> list[Hashable]:
        """Return and clear the list of blocks evicted since the last drain."""
        out, self.evicted = self.evicted, []
        return out

    @property
    def hit_ratio(self) -> float:
        """Hits / lookups (0 before any lookup)."""
        return self.hits / self.lookups if self.lookups else 0.0


class LRUCache(BlockCache):
    """Least-recently-used eviction (baseline)."""

    policy = "lru"

    def __init__(self, capacity: int) -> None:
        super().__init__(capacity)
        self._d: OrderedDict[Hashable, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._d)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._d

    def _touch(self, key: Hashable) -> None:
        self._d.move_to_end(key)

    def _evict_one(self) -> bool:
        victim = next((k for k in self._d if k not in self.pins), None)
        if victim is None:
            return False  # everything pinned: allocation failure
        del self._d[victim]
        self.evictions += 1
        self.evicted.append(victim)
        return True

    def _insert(self, key: Hashable) -> bool:
        if self.capacity == 0:
            return False
        if len(self._d) >= self.capacity and not self._evict_one():
            return False
        self._d[key] = None
        return True


class LRUKCache(BlockCache):
    """LRU-K eviction (default K=2) with retained history of evicted blocks."""

    policy = "lru-k"

    def __init__(self, capacity: int, k: int = 2) -> None:
        super().__init__(capacity)
        if k < 1:
            raise ValueError(f"k must be >= 1 (got {k})")
        self.k = k
        self._clock = 0
        self._hist: dict[Hashable, list[int]] = {}  # resident: last K access times, newest last
        self._cold: OrderedDict[Hashable, None] = OrderedDict()  # resident with < K refs
        self._heap: list[tuple[int, int, Hashable]] = []  # (K-th most recent time, seq, key)
        self._seq = 0
        self._retained: OrderedDict[Hashable, list[int]] = OrderedDict()  # evicted history

    def __len__(self) -> int:
        return len(self._hist)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._hist

    def _record(self, key: Hashable, hist: list[int]) -> None:
        self._clock += 1
        hist.append(self._clock)
        if len(hist) > self.k:
            del hist[0]
        self._hist[key] = hist
        if len(hist) >= self.k:
            self._cold.pop(key, None)
            self._seq += 1
            heapq.heappush(self._heap, (hist[0], self._seq, key))
            if len(self._heap) > 4 * len(self._hist) + 64:
                self._compact()
        else:
            self._cold[key] = None
            self._cold.move_to_end(key)

    def _touch(self, key: Hashable) -> None:
        self._record(key, self._hist[key])

    def _compact(self) -> None:
        # Each touch pushes a fresh heap entry; drop stale ones so the heap stays O(capacity).
        self._heap = [
            (h[0], i, k) for i, (k, h) in enumerate(self._hist.items()) if len(h) >= self.k
        ]
        heapq.heapify(self._heap)
        self._seq = len(self._heap)

    def _evict_one(self) -> bool:
        for k in self._cold:
            if k not in self.pins:
                del self._cold[k]
                self._drop(k)
                return True
        skipped = []
        victim = None
        while self._heap:
            t, seq, k = heapq.heappop(self._heap)
            h = self._hist.get(k)
            if h is None or len(h) < self.k or h[0] != t:
                continue  # stale heap entry
            if k in self.pins:
                skipped.append((t, seq, k))
                continue
            victim = k
            break
        for item in skipped:
            heapq.heappush(self._heap, item)
        if victim is None:
            return False
        self._drop(victim)
        return True

    def _drop(self, key: Hashable) -> None:
        self._retained[key] = self._hist.pop(key)
        self._retained.move_to_end(key)
        while len(self._retained) > max(self.capacity, 1):
            self._retained.popitem(last=False)
        self.evictions += 1
        self.evicted.append(key)

    def _insert(self, key: Hashable) -> bool:
        if self.capacity == 0:
            return False
        if len(self._hist) >= self.capacity and not self._evict_one():
            return False
        self._record(key, self._retained.pop(key, []))
        return True


def make_cache(policy: str, capacity: int) -> BlockCache:
    """Factory: ``"lru"`` or ``"lru-k"`` (K=2)."""
    if policy == "lru":
        return LRUCache(capacity)
    if policy == "lru-k":
        return LRUKCache(capacity, 2)
    raise ValueError(f"policy: unknown eviction policy {policy!r}; expected 'lru' or 'lru-k'")
