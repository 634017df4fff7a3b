"""The twin's expectation of a moved job agrees with the twin's own run of it, at demo size."""

from __future__ import annotations

import numpy as np

from rollout.services.authoring import THROUGHPUT_FLOOR, analysis_defaults
from simulation.engine import Engine
from simulation.management.commands.seed_migrations import PLANS
from simulation.management.commands.seed_twin import demo_scenario, same_workloads
from simulation.scaling import _training_rate

# The demo's pair as ``seed_twin`` makes it by default (4,096 cards a side, seed 7): the
# moved job of acme-bank's pilot is then a 70B one on 128 H100s.
DEMO_CARDS, DEMO_SEED = 4096, 7


def _rates(engine: Engine, name: str, steps: int) -> tuple[list[float], list[int]]:
    """The job's exported samples/s and held cards over ``steps`` steps from a cold start."""
    j = engine.names[name][1]
    rates, cards = [], []
    for _ in range(steps):
        snapshot = engine.step()
        keys = snapshot.keys("workload")
        rates.append(
            float(snapshot.values["workload"]["training_samples_per_second"][keys.index(name)])
        )
        cards.append(int(engine.state.jobs.card_counts()[j]))
    return rates, cards


def test_the_demos_moved_job_runs_at_the_twins_expectation_from_its_first_step():
    source = demo_scenario(cards=DEMO_CARDS, seed=DEMO_SEED, hardware="h100-sxm", policy="split")
    target = same_workloads(source, hardware="ascend-950dt", policy="unified")
    pilot = PLANS[0][1]  # acme-bank's pilot job
    job = next(j for j in source.training_jobs if j.name == pilot)
    assert job.params >= 7e10 and job.min_cards >= 128  # the full-size shape, not a toy
    # The seeded pilot: its first measurement reads the target's first steps (the twin's first
    # ticks) after the initial delay, over the authoring defaults' window.
    defaults = analysis_defaults()
    steps = (defaults.initial_delay_seconds + defaults.window_seconds) // (
        defaults.telemetry_interval_seconds
    )
    before, src_cards = _rates(Engine(source), pilot, steps)
    after, tgt_cards = _rates(Engine(target), pilot, steps)
    assert min(before) > 0 and min(after) > 0, (before, after)
    # The expectation the gate uses: the source's measured figure × the model's factor for the
    # cards each side held.
    factor = _training_rate(target, pilot, "ascend-950dt", tgt_cards[-1]) / _training_rate(
        source, pilot, "h100-sxm", src_cards[-1]
    )
    expected = float(np.mean(before)) * factor
    # The run and the model are one code path: within the spread placement's cost (< 1 %) ...
    assert np.allclose(after, expected, rtol=0.01), (after, expected)
    # ... so the pilot's default criterion holds on its first window.
    assert np.mean(after) >= THROUGHPUT_FLOOR * expected
