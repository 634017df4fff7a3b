"""Breaks in chart lines: a hole in the data is a gap, a bucket the cadence skips is not."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cluster_portal.web.chartgaps import break_gaps, typical_step

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SIX_HOURS = 6 * 3600


def _breaks(seconds: list[float]) -> int:
    xs = [T0 + timedelta(seconds=s) for s in seconds]
    return sum(y is None for y in break_gaps(xs, [1.0] * len(xs))[1])


def _bucketed(interval: float, step: int) -> list[float]:
    """Samples every ``interval`` s over 6 h, read as ``step`` s buckets (a chart's read)."""
    return sorted({int(interval * n) // step * step for n in range(int(SIX_HOURS / interval))})


@pytest.mark.parametrize("interval", (10, 15, 30, 37, 40, 45, 60))
def test_a_steady_series_read_in_finer_buckets_is_one_line(interval):
    """Regression (issue 34): 40 s data in a 6 h chart's 36 s buckets leaves a regular empty
    bucket; single steps were mostly 36 s, so every 72 s step broke the line into dashes."""
    assert _breaks(_bucketed(interval, 36)) == 0


def test_a_lost_bucket_in_a_regular_series_is_still_a_gap():
    seconds = list(range(0, SIX_HOURS, 36))
    seconds.remove(3600)
    assert _breaks(seconds) == 1


def test_a_two_hour_outage_is_one_gap_and_does_not_move_the_cadence():
    seconds = [s for s in range(0, SIX_HOURS, 36) if not 3600 <= s < 3 * 3600]
    assert _breaks(seconds) == 1
    assert typical_step([T0 + timedelta(seconds=s) for s in seconds]) == 36


def test_raw_samples_with_jitter_show_a_missed_scrape():
    seconds = [i * 15 + (0.8 if i % 2 else -0.8) for i in range(1000)]
    del seconds[500]
    assert _breaks(seconds) == 1
