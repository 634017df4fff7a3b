"""Card and link failures: restarts from checkpoint, failover, repair, fault domains."""

from __future__ import annotations

import dataclasses

import numpy as np

from simulation.engine import Engine, Faults, default_scenario


def _faulty(card_mtbf: float, link_mtbf: float = 1e9) -> Engine:
    s = default_scenario(768, seed=9, n_training_jobs=20, n_services=8)
    # The Philly-like mix is mostly small jobs: add one gang that must span racks.
    big = dataclasses.replace(s.training_jobs[0], name="big", min_cards=64, max_cards=64)
    big.params, big.submit_time_s, big.work_samples, big.priority = 13e9, 0.0, 1e12, 3
    s = dataclasses.replace(
        s,
        training_jobs=[*s.training_jobs, big],
        faults=Faults(
            card_mtbf_hours=card_mtbf,
            card_repair_hours=0.5,
            link_mtbf_hours=link_mtbf,
            link_repair_hours=0.5,
        ),
    )
    return Engine(s)


def test_card_failures_restart_jobs_and_fail_over_replicas():
    eng = _faulty(card_mtbf=200.0)  # ~4 failures per hour on 768 cards
    unhealthy_seen = False
    for _ in range(180):
        snap = eng.step()
        health = snap["accelerator_health_status"]
        unhealthy_seen |= bool((health == 0).any())
        # A failed card never stays allocated (the failure stays in its fault domain).
        assert not ((eng.state.owner >= 0) & (eng.state.health == 0)).any()
    c = eng.state.counters
    assert unhealthy_seen and c["card_failures"] > 0
    assert c["restarts"] + c["failovers"] > 0
    assert snap.cluster["cluster_card_failures_total"] == c["card_failures"]


def test_failed_cards_are_repaired_after_their_repair_time():
    eng = _faulty(card_mtbf=200.0)
    eng.run_until(1800)
    failed = dict(eng.state.failed_until)
    assert failed
    eng.run_until(max(failed.values()) + 60)
    assert all(
        eng.state.health[c] == 1
        or c in eng.state.failed_until
        and eng.state.failed_until[c] != failed[c]
        for c in failed
    )


def test_no_faults_means_no_failures():
    s = default_scenario(768, seed=9, n_training_jobs=20, n_services=8, faults=False)
    eng = Engine(s)
    eng.run_until(3 * 3600)
    assert eng.state.counters["card_failures"] == 0
    assert (eng.state.health == 1).all()


def test_a_link_failure_only_slows_jobs_spanning_that_rack():
    eng = _faulty(card_mtbf=1e9)
    eng.run_until(1800)
    st, idx = eng.state, eng.idx
    multi = [j for j in range(eng.jobs.n) if st.job_state[j] == 2 and st.job_racks[j] > 1]
    assert multi
    j = multi[0]
    rack = int(idx.card_rack[st.job_cards[j][0]])
    link = int(np.flatnonzero(idx.link_rack == rack)[0])
    st.faults.fail_link(link, st.t + 3600, st.t + 30)
    before = st.job_overhead.copy()
    penalty = st.faults.link_effects(60.0, st.t)
    assert penalty is not None and penalty[j] > 1.0
    touched = set(st.owner[idx.card_rack == rack].tolist())
    for k in range(eng.jobs.n):
        if k not in touched or st.job_racks[k] <= 1:
            assert penalty[k] == 1.0 and st.job_overhead[k] == before[k]
    assert st.job_overhead[j] > before[j]  # the 30 s reroute stall
    snap = eng.step()
    assert snap.values["link"]["link_status"][link] == 0.0
