"""Engine: determinism, save/load continuity, invariants, hooks and snapshot rows."""

from __future__ import annotations

import pickle
import re

import numpy as np
import pytest

from simulation.engine import METRICS, Engine, default_scenario
from simulation.engine import state as state_format


def _fingerprint(snap) -> list:
    out = []
    for kind in sorted(snap.values):
        for name in sorted(snap.values[kind]):
            v = snap.values[kind][name]
            out.append((name, np.asarray(v, dtype=float).tobytes()))
    return out


def test_same_seed_gives_identical_runs(small_scenario):
    a, b = Engine(small_scenario), Engine(small_scenario)
    for _ in range(30):
        assert _fingerprint(a.step()) == _fingerprint(b.step())
    assert a.summary() == b.summary()


def test_different_seeds_give_different_runs():
    a = Engine(default_scenario(768, seed=1, n_training_jobs=24, n_services=8))
    b = Engine(default_scenario(768, seed=2, n_training_jobs=24, n_services=8))
    a.run_until(1800)
    b.run_until(1800)
    assert a.summary() != b.summary()


def test_save_load_continue_is_bit_identical_to_an_uninterrupted_run(small_scenario):
    ref = Engine(small_scenario)
    ref.run_until(3600)
    blob = ref.save_state()
    assert isinstance(blob, bytes)
    resumed = Engine.load_state(blob)
    assert resumed.t == ref.t
    for _ in range(40):
        assert _fingerprint(ref.step()) == _fingerprint(resumed.step())
    assert ref.summary() == resumed.summary()
    # Field by field the states are equal too (whole-blob bytes may differ only in how
    # the container orders its members).
    a, b = ref.state.__dict__, resumed.state.__dict__
    assert a.keys() == b.keys()
    for k in a:
        assert _same(a[k], b[k]), k


def _same(x, y) -> bool:
    if isinstance(x, np.ndarray):
        return x.dtype == y.dtype and np.array_equal(x, y, equal_nan=x.dtype.kind == "f")
    if isinstance(x, (list, tuple)):
        return len(x) == len(y) and all(_same(p, q) for p, q in zip(x, y, strict=True))
    if isinstance(x, dict):  # in order: an LRU's order is its state
        return list(x) == list(y) and all(_same(x[k], y[k]) for k in x)
    if isinstance(x, np.random.Generator):
        return x.bit_generator.state == y.bit_generator.state
    if type(x) is type(y) and hasattr(x, "__dict__"):  # caches: field by field
        # A pure memo (results of a function of the static tables, e.g. the job table's
        # step-time memo) is not state: a resumed run rebuilds it as it goes.
        memos = getattr(type(x), "MEMO_FIELDS", ())
        return _same(
            {k: v for k, v in vars(x).items() if k not in memos},
            {k: v for k, v in vars(y).items() if k not in memos},
        )
    return pickle.dumps(x) == pickle.dumps(y)


def test_saved_state_is_versioned_and_compact():
    eng = Engine(default_scenario(10240, seed=7))
    eng.step()
    blob = eng.save_state()
    assert blob[:6] == b"CPTWIN" and blob[6] == state_format.FORMAT_VERSION
    assert len(blob) < 3_000_000
    with pytest.raises(ValueError, match="magic"):
        Engine.load_state(b"nonsense")
    with pytest.raises(ValueError, match="version"):
        Engine.load_state(blob[:6] + bytes([99]) + blob[7:])


def test_invariants_hold_at_every_step(small_scenario):
    eng = Engine(small_scenario)
    n = small_scenario.topology.cards
    for _ in range(24 * 6):
        snap = eng.step()
        c = snap.cluster
        st = eng.state
        assert c["cluster_cards_allocated"] <= c["cluster_cards_healthy"] <= n
        owned = st.owner >= 0
        assert not (owned & (st.health == 0)).any()
        sizes = sum(x.size for x in st.job_cards) + sum(x.size for x in st.svc_cards)
        assert sizes == int(owned.sum())  # every card has exactly one owner
        pool = snap.values["memory_pool"]
        assert (
            pool["memory_pool_hbm_reserved_bytes"] <= pool["memory_pool_hbm_total_bytes"] + 1
        ).all()
        assert (
            pool["memory_pool_hbm_live_bytes"] <= pool["memory_pool_hbm_reserved_bytes"] + 1
        ).all()
        assert (
            pool["memory_pool_dram_used_bytes"] <= pool["memory_pool_dram_total_bytes"] + 1
        ).all()
        card = snap.values["accelerator"]
        assert (card["accelerator_hbm_used_bytes"] <= card["accelerator_hbm_total_bytes"]).all()
        assert c["cluster_training_queue_length"] >= 0
        assert (st.job_done >= 0).all() and (st.job_overhead >= 0).all()
        w = snap.values["workload"]
        assert (np.nan_to_num(w["inference_request_rate_per_second"]) >= 0).all()


def test_run_until_advances_whole_steps_to_the_target(small_scenario):
    eng = Engine(small_scenario)
    eng.run_until(600)
    assert eng.t == pytest.approx(600)
    assert eng.state.steps == 10


def test_traffic_share_scales_a_services_demand_and_zero_releases_it(small_scenario):
    eng = Engine(small_scenario)
    name = small_scenario.services[0].name
    eng.step()
    w = eng.snapshot().values["workload"]
    i = eng.jobs.n
    full = w["inference_request_rate_per_second"][i]
    eng.set_traffic_share(name, 0.25)
    assert eng.traffic_share(name) == 0.25
    eng.step()
    quarter = eng.snapshot().values["workload"]["inference_request_rate_per_second"][i]
    assert 0.15 * full < quarter < 0.35 * full
    eng.set_traffic_share(name, 0.0)
    small_scenario.services[0].min_replicas = 0
    eng2 = Engine(small_scenario)
    eng2.set_traffic_share(name, 0.0)
    eng2.step()
    assert eng2.snapshot().values["workload"]["workload_allocated_cards"][i] == 0
    with pytest.raises(ValueError, match="share"):
        eng.set_traffic_share(name, 1.5)
    with pytest.raises(ValueError, match="unknown"):
        eng.set_traffic_share("nope", 0.5)


def test_zero_share_suspends_a_training_job(small_scenario):
    eng = Engine(small_scenario)
    eng.step()
    j = int(np.flatnonzero(eng.state.job_state == 2)[0])
    eng.set_traffic_share(eng.jobs.names[j], 0.0)
    eng.step()
    assert eng.state.job_cards[j].size == 0 and eng.state.job_state[j] == 1


def test_memory_pool_can_be_stepped_alone_without_moving_the_clock(small_scenario):
    eng = Engine(small_scenario)
    eng.run_until(1800)
    t, owner = eng.t, eng.state.owner.copy()
    lookups = eng.state.counters["kv_lookups"]
    agg = eng.step_memory_pool(600)
    assert eng.t == t and (eng.state.owner == owner).all()
    assert eng.state.counters["kv_lookups"] > lookups
    assert (agg["hbm_reserved"] <= agg["hbm_total"] + 1).all()
    assert (agg["hbm_live"] <= agg["hbm_reserved"] + 1).all()
    with pytest.raises(ValueError, match="seconds"):
        eng.step_memory_pool(0)


def test_snapshot_rows_use_catalogued_names_and_stable_keys(small_scenario):
    eng = Engine(small_scenario)
    snap = eng.step()
    rows = list(snap.rows())
    names = {m.name for m in METRICS}
    assert {r[0] for r in rows} <= names
    kinds = {r[1] for r in rows}
    assert {
        "accelerator",
        "cluster",
        "supernode",
        "rack",
        "node",
        "link",
        "memory_pool",
        "workload",
    } <= kinds
    card_keys = [r[2] for r in rows if r[0] == "accelerator_health_status"]
    assert len(card_keys) == small_scenario.topology.cards
    assert all(re.fullmatch(r"sn\d+/r\d+/n\d+/c\d", k) for k in card_keys)
    assert len(set(card_keys)) == len(card_keys)
    health = {r[3] for r in rows if r[0] == "accelerator_health_status"}
    assert health <= {1.0, 0.0, -1.0}
    wl = {r[2] for r in rows if r[1] == "workload"}
    assert {s.name for s in small_scenario.services} <= wl
    assert isinstance(snap["accelerator_utilization_ratio"], np.ndarray)


def test_topology_listing_matches_card_keys_and_hardware(small_scenario):
    eng = Engine(small_scenario)
    topo = eng.topology()
    assert len(topo["cards"]) == small_scenario.topology.cards
    assert {c["hardware"] for c in topo["cards"]} == {small_scenario.topology.hardware}
    node_keys = {n["key"] for n in topo["nodes"]}
    assert all(c["node"] in node_keys for c in topo["cards"])
    rack_keys = {r["key"] for r in topo["racks"]}
    assert all(n["rack"] in rack_keys for n in topo["nodes"])
    assert len(topo["supernodes"]) == 2
    tenants = {w["tenant"] for w in eng.workloads()}
    assert len(tenants) >= 3


def test_metric_catalogue_has_the_required_accelerator_metrics():
    names = {m.name for m in METRICS}
    for n in (
        "accelerator_utilization_ratio",
        "accelerator_hbm_used_bytes",
        "accelerator_hbm_total_bytes",
        "accelerator_temperature_celsius",
        "accelerator_power_watts",
        "accelerator_health_status",
    ):
        assert n in names
    assert len(names) == len(METRICS)
    assert all(m.unit and m.description for m in METRICS)
