"""The engine's saved state: an explicit, versioned format that loads without pickle."""

from __future__ import annotations

import pickle
import zlib

import pytest

from simulation.engine import Engine
from simulation.engine import state as state_format


def _run(small_scenario, seconds: float = 1800) -> Engine:
    engine = Engine(small_scenario)
    engine.run_until(seconds)
    return engine


def _flat(st) -> dict:
    """The state as formats 1 and 2 held it: one flat attribute dict."""
    flat = {old: getattr(st, old) for old in state_format.LEGACY_FIELDS}
    flat.update(t=st.t, steps=st.steps, py_rng=st.py_rng, np_rng=st.np_rng)
    flat.update(summary=st.summary, counters=dict(st.counters))
    return flat


def test_a_saved_state_loads_and_continues_without_unpickling(small_scenario, monkeypatch):
    engine = _run(small_scenario)
    blob = engine.save_state()

    def refuse(*_args, **_kwargs):
        raise AssertionError("format 2 must not unpickle")

    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "Unpickler", refuse)
    resumed = Engine.load_state(blob)
    assert [list(engine.step().rows()) for _ in range(5)] == [
        list(resumed.step().rows()) for _ in range(5)
    ]


def test_a_format_1_state_from_before_the_change_still_loads(small_scenario):
    engine = _run(small_scenario)
    payload = {"version": 1, "scenario": engine.scenario.to_dict(), "state": _flat(engine.state)}
    old_bytes = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)  # as format 1 wrote
    legacy = state_format.MAGIC + b"\x01" + zlib.compress(old_bytes, 3)
    resumed = Engine.load_state(legacy)
    assert resumed.t == engine.t
    assert list(resumed.step().rows()) == list(engine.step().rows())


def test_a_format_1_blob_naming_foreign_code_is_refused_with_a_clear_message():
    class Sneaky:
        def __reduce__(self):
            return (print, ("ran",))

    blob = state_format.MAGIC + b"\x01" + zlib.compress(pickle.dumps({"state": Sneaky()}))
    with pytest.raises(ValueError, match="builtins.print.*reset the run"):
        Engine.load_state(blob)


def test_corrupt_and_newer_states_are_refused_naming_the_problem(small_scenario):
    blob = _run(small_scenario, 600).save_state()
    with pytest.raises(ValueError, match="corrupt"):
        Engine.load_state(blob[:7] + b"garbage")
    with pytest.raises(ValueError, match="newer than this engine reads"):
        Engine.load_state(blob[:6] + bytes([state_format.FORMAT_VERSION + 1]) + blob[7:])


def test_saving_a_value_the_format_does_not_know_names_the_field(small_scenario):
    engine = Engine(small_scenario)
    engine.state.services.counters["oops"] = object()
    with pytest.raises(
        TypeError, match=r"state\.mechanisms\.services\.counters\.oops holds a object"
    ):
        engine.save_state()


def test_a_format_3_state_still_loads_and_continues_like_format_4(small_scenario):
    engine = _run(small_scenario)
    scen = engine.scenario.to_dict()
    old, new = state_format.dump_v3(scen, engine.state), engine.save_state()
    assert old[6] == 3 and new[6] == state_format.FORMAT_VERSION == 4
    a, b = Engine.load_state(old), Engine.load_state(new)
    for _ in range(5):
        want = list(engine.step().rows())
        assert list(a.step().rows()) == want
        assert list(b.step().rows()) == want
    assert a.summary() == b.summary() == engine.summary()


def test_a_flipped_byte_fails_the_checksum_before_anything_is_decoded(small_scenario):
    blob = bytearray(_run(small_scenario, 600).save_state())
    blob[len(blob) // 2] ^= 0xFF
    with pytest.raises(ValueError, match="checksum"):
        Engine.load_state(bytes(blob))


def test_a_numpy_scalar_inside_a_cache_map_is_refused_naming_the_field(small_scenario):
    # marshal would silently write it as bytes; the save-time scan must catch it.
    import numpy as np

    engine = _run(small_scenario, 600)
    cache = engine.state.memory.caches[0]
    cache.pins[("x", 1)] = np.int64(1)
    with pytest.raises(TypeError, match=r"memory\.caches\[0\]<\w+>\.pins holds a int64"):
        engine.save_state()


def test_jobs_that_hold_no_cards_load_back_with_empty_card_arrays(small_scenario):
    engine = _run(small_scenario)
    resumed = Engine.load_state(engine.save_state())
    before, after = engine.state.jobs.cards, resumed.state.jobs.cards
    assert [c.tolist() for c in before] == [c.tolist() for c in after]
    assert {c.dtype for c in before} == {c.dtype for c in after}


def test_engines_loaded_from_one_scenario_share_static_tables_but_not_their_step(small_scenario):
    ref = _run(small_scenario)
    blob = ref.save_state()
    a, b = Engine.load_state(blob), Engine.load_state(blob)
    assert a.world.idx is b.world.idx  # the static world is built once per process
    assert a.world.svc.pending is not b.world.svc.pending
    assert a.world.svc.prompt is not b.world.svc.prompt
    b.step()  # b runs one step ahead: a must not see b's backlog hint or counters
    for _ in range(4):
        want = list(ref.step().rows())
        assert list(a.step().rows()) == want
        b.step()
    assert a.summary() == ref.summary()
