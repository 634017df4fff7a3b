"""Each mechanism owns its slice of the state, checks its invariants, and the snapshot only reads."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from simulation.engine import Engine, default_scenario
from simulation.engine import state as state_format
from simulation.engine.mechanisms import CardPool, InvariantError
from simulation.engine.scenario.types import Scenario
from simulation.engine.snapshot import build_snapshot

FIXTURES = Path(__file__).parent / "fixtures"


def _variant(base: Scenario, **changes) -> Scenario:
    data = base.to_dict()
    for path, value in changes.items():
        section, key = path.split("__")
        data[section][key] = value
    return Scenario.from_dict(data)


@pytest.mark.parametrize("variant", ["unified", "split", "faulty"])
def test_every_mechanism_keeps_its_invariants_at_every_step(small_scenario, variant):
    scen = {
        "unified": small_scenario,
        "split": _variant(small_scenario, policy__name="split"),
        "faulty": _variant(
            small_scenario, faults__card_mtbf_hours=50.0, faults__link_mtbf_hours=5.0
        ),
    }[variant]
    eng = Engine(scen)
    for i in range(150):
        eng.step()
        eng.check()
        if i == 50:
            eng.set_traffic_share(eng.svc.names[0], 0.2)
            eng.set_traffic_share(eng.jobs.names[0], 0.0)
    c = eng.state.counters
    if variant == "faulty":
        assert c["card_failures"] > 0 and c["link_failures"] > 0


def test_the_card_pool_refuses_a_double_allocation_and_a_foreign_release():
    pool = CardPool(8)
    pool.bind(3)
    pool.allocate(np.array([0, 1]), 0)
    with pytest.raises(InvariantError, match="card 1 already owned by 0"):
        pool.allocate(np.array([1, 2]), 1)
    with pytest.raises(InvariantError, match="owner 1 does not hold"):
        pool.release(np.array([0]), 1)
    pool.set_health(5, False)
    with pytest.raises(InvariantError, match="failed card"):
        pool.allocate(np.array([5]), 2)
    with pytest.raises(InvariantError, match="out of range"):
        pool.allocate(np.array([6]), 3)


def test_a_check_names_the_mechanism_whose_state_was_corrupted(small_scenario):
    eng = Engine(small_scenario)
    eng.run_until(1800)
    j = int(np.flatnonzero(eng.state.jobs.state == 2)[0])
    eng.state.cards.owner[eng.state.jobs.cards[j][0]] = -1  # behind the pool's back
    with pytest.raises(InvariantError, match="Jobs: job .* card pool disagree"):
        eng.check()


def _digest(eng: Engine) -> str:
    return hashlib.sha256(eng.save_state()).hexdigest()


def test_the_snapshot_is_a_pure_read(small_scenario):
    eng = Engine(small_scenario)
    eng.run_until(1200)
    before = _digest(eng)
    first = build_snapshot(eng.world, eng.state, eng.last_result)
    second = build_snapshot(eng.world, eng.state, eng.last_result)
    assert list(first.rows()) == list(second.rows()) == list(eng.snapshot().rows())
    assert _digest(eng) == before  # no state, counter or RNG moved


def test_old_flat_attribute_names_read_through_but_cannot_be_written(small_scenario):
    eng = Engine(small_scenario)
    eng.run_until(600)
    assert eng.state.owner is eng.state.cards.owner
    assert eng.state.job_state is eng.state.jobs.state
    with pytest.raises(AttributeError, match="state.cards.owner"):
        eng.state.owner = np.zeros(3)
    with pytest.raises(TypeError):
        eng.state.counters["card_failures"] = 5  # each mechanism counts its own


def test_a_state_saved_by_the_format_2_engine_loads_with_every_value_and_continues():
    blob = (FIXTURES / "state_format2_2026-12-01.bin").read_bytes()
    facts = json.loads((FIXTURES / "state_format2_2026-12-01.json").read_text())
    assert blob[6] == 2
    eng = Engine.load_state(blob)
    st = eng.state

    def sha(a) -> str:
        return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:16]

    assert (st.t, st.steps) == (facts["t"], facts["steps"])
    assert sha(st.cards.owner) == facts["owner_sha"]
    assert sha(st.cards.health) == facts["health_sha"]
    assert sha(st.thermals.temperature) == facts["temperature_sha"]
    assert sha(st.jobs.state) == facts["job_state_sha"]
    assert sha(st.jobs.done) == facts["job_done_sha"]
    assert [c.tolist() for c in st.services.cards] == facts["svc_cards"]
    assert st.services.share.tolist() == facts["svc_share"]
    assert st.services.backlog.tolist() == facts["svc_backlog"]
    assert sorted([k, v] for k, v in st.faults.failed_until.items()) == facts["failed_until"]
    assert (
        sorted([k, v] for k, v in st.faults.link_failed_until.items()) == facts["link_failed_until"]
    )
    expected = {k: v for k, v in facts["counters"].items() if k != "requests"}
    # Counters added after the fixture was written (issue 25: prompts_truncated) start at zero.
    added = {k: v for k, v in st.counters.items() if k not in expected}
    assert all(v == 0 for v in added.values())
    assert {k: v for k, v in st.counters.items() if k in expected} == expected
    assert st.summary == facts["summary"]
    assert [len(c) for c in st.memory.caches] == facts["cache_sizes"]
    assert [len(c) for c in st.memory.dram_caches] == facts["dram_cache_sizes"]
    assert st.memory.cache_seq == facts["cache_seq"]
    eng.check()
    # Re-saved in the new format it continues exactly as the converted state does.
    again = Engine.load_state(eng.save_state())
    assert again.save_state()[6] == state_format.FORMAT_VERSION
    for _ in range(5):
        assert list(eng.step().rows()) == list(again.step().rows())
        eng.check()


def test_the_mechanisms_are_the_whole_state(small_scenario):
    eng = Engine(small_scenario)
    eng.run_until(600)
    own = set(vars(eng.state))
    assert own == {"t", "steps", "py_rng", "np_rng", "summary", *state_format.MECHANISMS}


def test_a_big_default_cluster_keeps_its_invariants():
    eng = Engine(default_scenario(4096, seed=5))
    for _ in range(30):
        eng.step()
        eng.check()
