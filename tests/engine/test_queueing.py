"""Analytic queue tails agree with the per-request discrete-event reference."""

from __future__ import annotations

import numpy as np
import pytest

from simulation.engine.perf.des import simulate_ggc
from simulation.engine.perf.queueing import erlang_c, ggc_latency


def test_erlang_c_matches_closed_forms():
    assert erlang_c(1, 0.7) == pytest.approx(0.7)
    assert erlang_c(2, 1.0) == pytest.approx(1.0 / 3.0)
    assert erlang_c(4, 4.5) == 1.0
    # Large c uses the log-space path: it must agree with the recurrence near the switch.
    small = erlang_c(64, 60.0)
    b = 1.0
    for k in range(1, 66):
        b = 60.0 * b / (k + 60.0 * b)
    direct = 65 * b / (65 - 60.0 * (1 - b))
    assert erlang_c(65, 60.0) == pytest.approx(direct, rel=1e-9)
    assert 0 < small < 1


@pytest.mark.parametrize("servers", [4, 8])
@pytest.mark.parametrize("ca2", [1.0, 2.0])
@pytest.mark.parametrize("rho", [0.3, 0.5, 0.7, 0.9])
def test_analytic_p99_is_within_15_percent_of_the_discrete_event_run(servers, ca2, rho):
    s0, s1 = 0.2, 1.0
    lam = rho * servers / (s0 + s1)
    q = ggc_latency(
        np.array([lam]), np.array([servers]), np.array([s0]), np.array([s1]), np.array([ca2])
    )
    times, _ = simulate_ggc(lam, servers, s0, s1, 120_000, np.random.default_rng(11), ca2)
    des_p99 = float(np.quantile(times, 0.99))
    assert q.p99[0] == pytest.approx(des_p99, rel=0.15)
    assert q.p50[0] == pytest.approx(float(np.median(times)), rel=0.15)


def test_waiting_grows_sharply_as_utilisation_approaches_one():
    lam = np.array([0.5, 0.8, 0.95]) * 8 / 1.2
    q = ggc_latency(lam, np.full(3, 8), np.full(3, 0.2), np.full(3, 1.0), np.ones(3))
    assert q.p99[0] < q.p99[1] < q.p99[2]
    assert q.pw[0] < q.pw[1] < q.pw[2]
