"""Unified memory pool: live vs reserved, fragmentation, offload, weight sharing."""

from __future__ import annotations

import numpy as np
import pytest

from simulation.engine import Engine, default_scenario


@pytest.fixture(scope="module")
def pools():
    out = {}
    for p in ("split", "unified"):
        eng = Engine(
            default_scenario(
                768, seed=5, n_training_jobs=20, n_services=8, policy=p, step_seconds=300.0
            )
        )
        eng.run_until(4 * 3600)
        out[p] = (eng, eng.snapshot())
    return out


def test_live_bytes_are_reported_separately_and_below_reserved(pools):
    for _, snap in pools.values():
        pool = snap.values["memory_pool"]
        assert (
            pool["memory_pool_hbm_live_bytes"] <= pool["memory_pool_hbm_reserved_bytes"] + 1
        ).all()
        assert (
            pool["memory_pool_kv_live_bytes"] <= pool["memory_pool_kv_allocated_bytes"] + 1
        ).all()


def test_split_reserves_far_more_than_it_uses_and_unified_tracks_live_bytes(pools):
    gap = {}
    for p, (_, snap) in pools.items():
        c = snap.cluster
        gap[p] = c["cluster_hbm_reserved_ratio"] - c["cluster_hbm_live_ratio"]
    assert gap["split"] > 2 * gap["unified"]


def test_fragmentation_ratios_are_fractions_and_paged_kv_has_small_internal_waste(pools):
    for _, snap in pools.values():
        pool = snap.values["memory_pool"]
        for k in (
            "memory_pool_internal_fragmentation_ratio",
            "memory_pool_external_fragmentation_ratio",
            "memory_pool_kv_hit_ratio",
        ):
            assert ((pool[k] >= 0) & (pool[k] <= 1)).all(), k
        used = pool["memory_pool_kv_allocated_bytes"] > 0
        assert (pool["memory_pool_internal_fragmentation_ratio"][used] < 0.05).all()


def test_only_unified_offloads_kv_and_shares_weights_in_dram(pools):
    split, uni = pools["split"][0], pools["unified"][0]
    assert split.state.counters["kv_offload_bytes"] == 0
    assert uni.state.counters["kv_offload_bytes"] > 0
    assert pools["split"][1].values["memory_pool"]["memory_pool_dram_used_bytes"].sum() == 0
    assert pools["unified"][1].values["memory_pool"]["memory_pool_dram_used_bytes"].sum() > 0


def test_prefix_hit_ratio_is_learned_from_the_sampled_cache(pools):
    for eng, _ in pools.values():
        assert eng.state.counters["kv_lookups"] > 0
        assert np.any(eng.state.svc_hit > 0)


def test_kv_allocation_failures_appear_only_when_replicas_are_starved():
    def failures(pool_fraction):
        s = default_scenario(
            768,
            seed=5,
            n_training_jobs=20,
            n_services=8,
            policy="split",
            step_seconds=300.0,
            inference_demand="legacy",  # services loaded to their budget: a pool can starve
        )
        s.policy.inference_pool_fraction = pool_fraction
        eng = Engine(s)
        eng.run_until(3 * 3600)
        return eng.state.counters["kv_alloc_failures"], eng.summary()["slo_attainment"]

    ok_fail, ok_slo = failures(None)  # pool sized for peak demand
    bad_fail, bad_slo = failures(0.02)  # a tiny inference pool: queues and KV saturate
    assert ok_fail == 0
    assert bad_fail > 0
    assert bad_slo < ok_slo
