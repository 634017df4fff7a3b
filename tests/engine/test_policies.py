"""split vs unified on the same diurnal inference + training workload.

Training demand is an arrival process; these tests offer more than the split training
partition can serve (``training_load=2``), the regime where sharing idle inference cards pays.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from simulation.engine import Engine, default_scenario


def _run(policy: str, **kw) -> Engine:
    s = default_scenario(
        1536,
        seed=11,
        n_services=10,
        step_seconds=300.0,
        policy=policy,
        training_load=2.0,
        **kw,
    )
    eng = Engine(s)
    eng.run_until(24 * 3600)
    return eng


@pytest.fixture(scope="module")
def runs() -> dict[str, dict]:
    return {p: _run(p).summary() for p in ("split", "unified")}


def test_unified_does_more_work_while_split_holds_idle_reservations(runs):
    split, uni = runs["split"], runs["unified"]
    assert uni["utilization_busy_mean"] > split["utilization_busy_mean"] + 0.02
    # The partition keeps the replicas tenants reserved for their peak: allocated, mostly idle.
    idle = {
        p: r["utilization_allocated_mean"] - r["utilization_busy_mean"] for p, r in runs.items()
    }
    assert idle["split"] > idle["unified"] + 0.1
    assert split["inference_duty_cycle"] < 0.5 * uni["inference_duty_cycle"]
    # Samples of different models are not comparable, so compare useful training compute.
    assert uni["training_pflops_mean"] > split["training_pflops_mean"]


def test_core_business_slos_are_not_starved_under_unified(runs):
    split, uni = runs["split"], runs["unified"]
    # Request-level tails (issue 25): round-robin per-replica queues with non-chunked prefill
    # miss ~10 % of TTFT targets at the autoscaler's 65 % occupancy even when capacity is
    # ample (long prompts block the prefill queue); unified must not do worse than split.
    assert uni["core_slo_attainment"] >= 0.85
    assert uni["core_slo_attainment"] >= split["core_slo_attainment"] - 0.02


def test_only_unified_preempts_training_for_inference(runs):
    assert runs["split"]["preemptions"] == 0
    assert runs["unified"]["preemptions"] + runs["unified"]["resizes"] > 0


def test_split_keeps_training_out_of_the_inference_pool():
    s = default_scenario(
        1536, seed=11, n_training_jobs=40, n_services=10, policy="split", step_seconds=300.0
    )
    eng = Engine(s)
    for _ in range(20):
        eng.step()
        jobs = eng.state.owner[eng.infer_pool]
        assert not ((jobs >= 0) & (jobs < eng.jobs.n)).any()


def test_night_window_gives_training_more_cards_at_night():
    # Cards open to training = held by training + free (queued gangs may wait for a compact
    # slot, so the held count alone also reflects delay scheduling).
    def training_cards(window):
        s = default_scenario(
            1536,
            seed=11,
            n_services=10,
            policy="unified",
            step_seconds=300.0,
            night_window=window,
            training_load=2.0,
            # Services loaded to their budget: a fleet's replicas are already at one per
            # service, so a hotter night target frees nothing there.
            inference_demand="legacy",
        )
        eng = Engine(s)
        eng.run_until(3 * 3600)  # 00:00 -> 03:00
        return eng.idx.n_cards - sum(c.size for c in eng.state.svc_cards)

    assert training_cards((22.0, 6.0)) > training_cards(None)


def test_preemption_rolls_a_job_back_to_its_last_checkpoint(small_scenario):
    eng = Engine(small_scenario)
    eng.run_until(3 * 3600 + 600)  # checkpoints every 30 min: 10 min of work since the last
    st = eng.state
    j = int(np.flatnonzero((st.job_state == 2) & (st.job_done > st.job_ckpt))[0])
    done, ckpt = st.job_done[j], st.job_ckpt[j]
    assert done > ckpt  # some work since the checkpoint
    lost0 = st.counters["lost_samples"]
    st.jobs.preempt(j, st.t, 300.0, "preemptions")
    assert st.job_done[j] == ckpt
    assert st.counters["lost_samples"] == pytest.approx(lost0 + done - ckpt)
    assert st.job_state[j] == 1 and st.job_cards[j].size == 0


def test_training_queue_waits_are_recorded_when_the_cluster_is_full():
    s = default_scenario(
        1536,
        seed=11,
        n_services=10,
        policy="split",
        step_seconds=300.0,
        training_load=2.0,
        training_demand="legacy",  # steady Poisson arrivals: the queue is full at 06:00 too
    )
    eng = Engine(s)
    eng.run_until(6 * 3600)
    snap = eng.snapshot()
    waits = snap.values["workload"]["training_queue_wait_seconds_total"][: eng.jobs.n]
    assert snap.cluster["cluster_training_queue_length"] > 0
    assert waits.max() > 0


def test_compare_uses_the_same_workload_for_both_policies():
    from simulation.engine.compare import run_policy

    s = default_scenario(512, seed=4, n_training_jobs=10, n_services=4, step_seconds=600.0)
    a = run_policy(s, "split", 2.0)
    b = run_policy(dataclasses.replace(s), "split", 2.0)
    assert a == b


def test_parallel_compare_gives_the_same_figures_as_a_serial_one():
    from simulation.engine.compare import run_compare

    s = default_scenario(512, seed=4, n_training_jobs=10, n_services=4, step_seconds=600.0)
    seen = []
    par = run_compare(s, 2.0, progress=lambda d, n: seen.append((d, n)), parallel=True)
    ser = run_compare(s, 2.0, parallel=False)
    assert par == ser
    assert par["split"] != par["unified"]
    assert seen and seen[-1][0] == seen[-1][1]


def test_seeds_and_policies_in_one_process_pool_give_the_serial_figures():
    from simulation.engine.compare import run_compare_seeds

    scens = {
        seed: default_scenario(512, seed=seed, n_training_jobs=10, n_services=4, step_seconds=600.0)
        for seed in (4, 5, 6)
    }
    seen = []
    par = run_compare_seeds(scens, 2.0, lambda d, n: seen.append((d, n)), parallel=True, workers=2)
    ser = run_compare_seeds(scens, 2.0, parallel=False)
    assert par == ser
    assert list(par) == [4, 5, 6] and all(list(r) == ["split", "unified"] for r in par.values())
    assert par[4]["split"] != par[5]["split"]  # each seed its own workload
    assert seen and seen[-1] == (3 * 2 * 12, 3 * 2 * 12)  # 2 h of 600 s steps, six runs
