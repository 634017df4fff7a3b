"""Training demand fitted to public cluster traces (issue 25 part 3)."""

from __future__ import annotations

import random

import pytest

from simulation.engine import default_scenario
from simulation.engine.scenario import demand


@pytest.fixture(scope="module")
def week():
    # Four weeks laid end to end, as ``validate`` measures them: one week's peak/trough and
    # mean cards per job are too noisy (same-size sweeps, a tail to 1,024 cards) to judge a fit.
    span, pooled = 7 * 86400.0, []
    for k, seed in enumerate((1, 2, 3, 4)):
        jobs = demand.draw_jobs(
            random.Random(seed),
            train_cards=4096,
            horizon_s=span,
            training_load=0.8,
            max_gang=1024,
        )
        pooled += [{**j, "submit": j["submit"] + k * span} for j in jobs if j["submit"] > 0]
    return demand.statistics(pooled, 4 * span)


@pytest.mark.parametrize(
    ("key", "rel"),
    [
        ("median_run_s", 0.15),
        ("mean_cards_per_job", 0.15),
        ("single_card_share", 0.03),
        ("iod_10min", 0.3),
        ("hourly_peak_trough", 0.4),
    ],
)
def test_a_drawn_week_matches_each_statistic_its_parameter_was_fitted_to(week, key, rel):
    assert week[key] == pytest.approx(demand.TARGETS[key][0], rel=rel)


def test_the_fit_solves_each_parameter_from_its_own_statistic():
    p = demand.fit()
    assert p.p1 == pytest.approx(0.91)
    assert p.amplitude == pytest.approx(8 / 10)  # peak/trough 9
    assert p.sweep_mean == pytest.approx(8.0)  # index of dispersion 2B - 1 = 15
    # Doubling the target median doubles the fitted one-card median.
    t = {**demand.TARGETS, "median_run_s": (400.0, "")}
    assert demand.fit(t).m1_s == pytest.approx(2 * p.m1_s, rel=0.02)


def test_bursts_and_the_daily_rhythm_are_mechanisms_not_noise(week):
    poisson = demand.DemandParams(0.91, demand.PARAMS.alpha, demand.PARAMS.m1_s, 0.0, 1.0)
    jobs = demand.draw_jobs(
        random.Random(1),
        train_cards=4096,
        horizon_s=7 * 86400.0,
        training_load=0.8,
        max_gang=1024,
        p=poisson,
    )
    flat = demand.statistics(jobs, 7 * 86400.0)
    assert flat["iod_10min"] < 2.0 < week["iod_10min"]
    assert flat["hourly_peak_trough"] < 2.0 < week["hourly_peak_trough"]


def test_a_scenario_can_use_the_trace_fitted_demand():
    s = default_scenario(1024, seed=5, n_services=5, hours=24.0, training_demand="cluster-traces")
    cards = [j.min_cards for j in s.training_jobs]
    assert sum(c == 1 for c in cards) / len(cards) > 0.85
    legacy = default_scenario(1024, seed=5, n_services=5, hours=24.0, training_demand="legacy")
    assert len(s.training_jobs) > 3 * len(legacy.training_jobs)
    with pytest.raises(ValueError, match="training_demand"):
        default_scenario(1024, training_demand="philly")
