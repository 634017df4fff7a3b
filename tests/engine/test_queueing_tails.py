"""Honest tails (issue 13): monotone in load and burstiness, backlog carried, timeouts counted."""

from __future__ import annotations

import numpy as np

from simulation.engine import Engine, default_scenario
from simulation.engine.catalog import get_hardware
from simulation.engine.perf.queueing import step_tails
from simulation.engine.scenario.types import InferenceService, Policy
from simulation.engine.sched.inference import ServiceTable


def _tails(lam, ca2=1.0, backlog=0.0, servers=64, es=10.0, dt=60.0, timeout=300.0):
    n = np.size(lam)
    return step_tails(
        np.atleast_1d(lam).astype(float),
        np.full(n, float(servers)),
        np.full(n, es),
        np.full(n, 0.5),
        np.full(n, ca2),
        np.full(n, backlog),
        dt,
        np.full(n, timeout),
    )


def test_p99_wait_is_monotone_in_load_through_and_past_saturation():
    lam = np.linspace(0.5, 12.0, 60)  # capacity is 64 / 10 s = 6.4 req/s
    w99 = _tails(lam).wait_quantile(0.99)
    assert np.all(np.diff(w99) >= -1e-9)
    assert w99[-1] > 10 * w99[0]


def test_burstier_arrivals_wait_longer():
    lam = np.full(3, 5.0)
    q = step_tails(
        lam, np.full(3, 64.0), np.full(3, 10.0), np.full(3, 0.5),
        np.array([1.0, 4.0, 16.0]), np.zeros(3), 60.0, np.full(3, 300.0),
    )  # fmt: skip
    w = q.wait_quantile(0.99)
    assert w[0] < w[1] < w[2]


def test_backlog_grows_step_over_step_until_requests_time_out():
    backlog, waits, timeouts = 0.0, [], []
    for _ in range(12):
        q = _tails(9.6, backlog=backlog, timeout=240.0)  # 1.5x capacity
        backlog = float(q.backlog[0])
        waits.append(float(q.wait_quantile(0.99)[0]))
        timeouts.append(float(q.timeouts[0]))
    assert all(b >= a - 1e-9 for a, b in zip(waits, waits[1:], strict=False))
    assert waits[3] > 2 * waits[0]
    assert timeouts[0] == 0.0 and timeouts[-1] > 0.0
    assert max(waits) <= 240.0 + 1e-6  # waiting is bounded by the timeout: then requests leave


def test_service_latency_never_shrinks_when_load_rises_past_capacity():
    hw = get_hardware("h100-sxm")
    svc = InferenceService("s", "t", "llama-2-70b", 8, 1.0, prompt_tokens_mean=1024)
    tbl = ServiceTable([svc], hw, Policy())
    prev = None
    for lam in (0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 9.0):
        lat = tbl.latency(np.array([lam]), np.array([4.0]), np.zeros(1), 60.0)
        cur = (lat["ttft_p99"][0], lat["p99"][0], lat["tpot_p99"][0])
        if prev is not None:
            assert all(c >= p - 1e-9 for c, p in zip(cur, prev, strict=True)), (lam, cur, prev)
        prev = cur


def test_slo_targets_are_scenario_inputs_not_derived_from_the_model():
    s = default_scenario(256, seed=3, n_training_jobs=10, n_services=6)
    assert {(x.slo_ttft_ms, x.slo_tpot_ms) for x in s.services} <= {(2000.0, 100.0), (1000.0, 50.0)}


def test_engine_reports_ttft_tpot_and_counts_requests_deterministically():
    def run():
        s = default_scenario(256, seed=5, n_training_jobs=10, n_services=5)
        e = Engine(s)
        e.run_until(1800)
        return e.summary(), e.snapshot()

    (a, snap), (b, _) = run(), run()
    assert a == b
    for k in ("ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p99_ms", "e2e_p99_ms"):
        assert a[k] > 0
    assert a["ttft_p99_ms"] >= a["ttft_p50_ms"] and a["tpot_p99_ms"] >= a["tpot_p50_ms"]
    assert a["inference_requests"] > 0 and a["inference_timeouts"] >= 0
    names = {r[0] for r in snap.rows(("cluster",))}
    assert {"cluster_inference_ttft_p99_seconds", "cluster_inference_tpot_p99_seconds"} <= names
