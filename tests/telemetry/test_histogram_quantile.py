"""Window quantiles from bucket counters (issue 23 part 1): Prometheus' histogram_quantile,
worked by hand, with a counter reset inside the window."""

from __future__ import annotations

import math

import pytest

from telemetry.read.local.histograms import counter_increase, histogram_quantile

INF = math.inf


def test_a_counter_reset_counts_what_the_restarted_counter_counted():
    # 10 → 30 is +20; the engine restarts and reads 5 (5 new); 5 → 12 is +7: 32 in all.
    assert counter_increase([10, 30, 5, 12]) == 32
    assert counter_increase([7]) == 0


def test_the_quantile_interpolates_linearly_inside_its_bucket():
    # 100 observations: 50 ≤ 0.1 s, 90 ≤ 0.5 s, 100 ≤ 1 s.
    buckets = [(0.1, 50), (0.5, 90), (1.0, 100), (INF, 100)]
    # p50: rank 50 is the top of the first bucket, which starts at 0 → 0.1.
    assert histogram_quantile(0.5, buckets) == pytest.approx(0.1)
    # p99: rank 99 lies in (0.5, 1.0], 9 of its 10 observations → 0.5 + 0.5 × 0.9 = 0.95.
    assert histogram_quantile(0.99, buckets) == pytest.approx(0.95)
    # p25: rank 25 in (0, 0.1] → 0.1 × 25/50 = 0.05.
    assert histogram_quantile(0.25, buckets) == pytest.approx(0.05)


def test_a_rank_in_the_inf_bucket_answers_the_highest_finite_bound():
    buckets = [(0.1, 10), (0.5, 20), (INF, 100)]
    assert histogram_quantile(0.99, buckets) == 0.5


def test_no_inf_bucket_no_observations_or_one_bucket_is_no_answer():
    assert math.isnan(histogram_quantile(0.5, [(0.1, 5), (0.5, 10)]))
    assert math.isnan(histogram_quantile(0.5, [(0.1, 0), (INF, 0)]))
    assert math.isnan(histogram_quantile(0.5, [(INF, 10)]))
    assert histogram_quantile(-0.1, [(0.1, 1), (INF, 1)]) == -INF
    assert histogram_quantile(1.1, [(0.1, 1), (INF, 1)]) == INF


def test_non_monotonic_buckets_are_made_monotonic_first():
    # A scrape caught the 0.5 bucket before the 0.1 one: 0.5 reads 40 < 0.1's 50 → 50.
    buckets = [(0.1, 50), (0.5, 40), (1.0, 100), (INF, 100)]
    # rank 75 in (0.5, 1.0]: 25 of 50 → 0.75.
    assert histogram_quantile(0.75, buckets) == pytest.approx(0.75)


def test_a_window_with_a_reset_gives_the_hand_computed_p99():
    # Two scrapes before and two after an engine restart; per bucket the increase is
    # (v1 - v0) + v2 + (v3 - v2) per counter_increase.
    scrapes = {
        0.1: [100, 150, 20, 60],  # +50, +20, +40 → 110
        0.5: [180, 260, 30, 90],  # +80, +30, +60 → 170
        1.0: [200, 300, 30, 100],  # +100, +30, +70 → 200
        INF: [200, 300, 30, 100],
    }
    increases = [(le, counter_increase(values)) for le, values in scrapes.items()]
    assert dict(increases) == {0.1: 110, 0.5: 170, 1.0: 200, INF: 200}
    # rank 198 lies in (0.5, 1.0] holding 30: (198 − 170) / 30 of the way → 0.5 + 0.5 × 28/30.
    assert histogram_quantile(0.99, increases) == pytest.approx(0.5 + 0.5 * 28 / 30)
    # rank 100 in (0, 0.1] holding 110 → 0.1 × 100/110.
    assert histogram_quantile(0.5, increases) == pytest.approx(0.1 * 100 / 110)
