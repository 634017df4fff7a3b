"""LRU and LRU-K prefix caches."""

from __future__ import annotations

import numpy as np

from simulation.engine.memory.cache import LRUCache, LRUKCache, make_cache


def _zipf_trace(n: int, universe: int, seed: int) -> list[int]:
    rng = np.random.default_rng(seed)
    w = np.arange(1, universe + 1, dtype=float) ** -0.9
    return rng.choice(universe, size=n, p=w / w.sum()).tolist()


def test_lru_hit_ratio_never_decreases_as_capacity_grows():
    trace = _zipf_trace(5000, 400, 1)
    ratios = []
    for cap in range(0, 420, 10):
        c = LRUCache(cap)
        for k in trace:
            c.access(k)
        ratios.append(c.hit_ratio)
    assert all(b >= a for a, b in zip(ratios, ratios[1:], strict=False))
    assert ratios[-1] > ratios[1] > 0


def _hot_plus_scans(seed: int) -> list:
    rng = np.random.default_rng(seed)
    out, scan = [], 0
    for _ in range(400):
        out += [("hot", int(h)) for h in rng.integers(0, 40, 10)]
        out += [("scan", scan + i) for i in range(30)]  # one-time blocks, never reused
        scan += 30
    return out


def test_lru_k_beats_lru_on_a_hot_set_mixed_with_one_time_scans():
    trace = _hot_plus_scans(2)
    lru, lruk = LRUCache(50), LRUKCache(50, k=2)
    for key in trace:
        lru.access(key)
        lruk.access(key)
    assert lruk.hit_ratio > lru.hit_ratio + 0.05


def test_lru_k_evicts_blocks_with_fewer_than_k_references_first():
    c = LRUKCache(3, k=2)
    for k in ("a", "a", "b", "b", "c"):
        c.access(k)
    c.access("d")  # 'c' has one reference: it goes although 'a' is older
    assert "c" not in c and "a" in c and "b" in c
    c.access("b")
    c.access("e")  # 'd' (one ref) goes before any twice-referenced block
    assert "d" not in c and "a" in c


def test_lru_k_among_hot_blocks_evicts_the_oldest_kth_reference():
    c = LRUKCache(2, k=2)
    for k in ("a", "b", "a", "b", "b"):
        c.access(k)
    # a's 2nd-most-recent ref is t1, b's is t4: a has the larger backward K-distance.
    c.access("c")
    c.access("c")
    assert "a" not in c and "b" in c


def test_pinned_blocks_are_never_evicted_by_either_policy():
    for policy in ("lru", "lru-k"):
        c = make_cache(policy, 3)
        for k in ("p", "x", "y"):
            c.access(k)
        c.pin("p")
        for k in range(50):
            c.access(("s", k))
            c.access(("s", k))
        assert "p" in c
        c.unpin("p")
        for k in range(50, 60):
            c.access(("s", k))
        assert "p" not in c


def test_insert_fails_when_everything_is_pinned():
    c = LRUCache(2)
    c.access("a")
    c.access("b")
    c.pin("a")
    c.pin("b")
    c.access("c")
    assert c.insert_failures == 1 and len(c) == 2


def test_resize_evicts_down_to_the_new_capacity():
    c = make_cache("lru-k", 10)
    for k in range(10):
        c.access(k)
    c.resize(4)
    assert len(c) == 4 and c.evictions == 6
