"""The twin's serving counters: totals carried by the resident engine, read from the store once."""

from __future__ import annotations

import numpy as np
import pytest

from simulation.services.serving_export import serving_rows
from simulation.services.tickdata import StepData

KEYS = ["train-a", "chat-a"]


def step(ts: float) -> StepData:
    nan = np.nan
    data = StepData(ts=ts, dt=60.0)
    data.dense["workload"] = (
        KEYS,
        {
            "inference_request_rate_per_second": np.array([nan, 10.0]),
            "inference_ttft_p50_seconds": np.array([nan, 0.2]),
            "inference_ttft_p99_seconds": np.array([nan, 0.9]),
            "inference_tpot_p50_seconds": np.array([nan, 0.03]),
            "inference_tpot_p99_seconds": np.array([nan, 0.08]),
        },
    )
    return data


def totals(rows) -> dict[str, float]:
    return {metric: value for _, (metric, _, key, value) in rows if key == "chat-a"}


@pytest.mark.django_db
def test_a_resident_engine_adds_to_the_totals_it_carries_without_reading_the_store(
    cluster, django_assert_num_queries
):
    memo: dict = {}
    first = totals(serving_rows(cluster, [step(1_780_000_000)], memo))
    with django_assert_num_queries(0):
        second = totals(serving_rows(cluster, [step(1_780_000_060)], memo))
    assert first["serving_requests_success_total"] == pytest.approx(600.0)
    assert second["serving_requests_success_total"] == pytest.approx(1200.0)
    assert second["serving_ttft_seconds_count"] == pytest.approx(
        2 * first["serving_ttft_seconds_count"]
    )
    assert not any(key == "train-a" for _, (_, _, key, _) in serving_rows(cluster, [step(0)], {}))


@pytest.mark.django_db
def test_without_a_memo_every_tick_reads_the_counters_from_the_store(
    cluster, django_assert_num_queries
):
    with django_assert_num_queries(1):  # the newest stored counters
        rows = serving_rows(cluster, [step(1_780_000_000)])
    assert totals(rows)["serving_requests_success_total"] == pytest.approx(600.0)


@pytest.mark.django_db
def test_thinned_counters_write_one_point_per_window_carrying_every_steps_increments(
    cluster, settings
):
    # The demo's ten steps per 10 s tick: with a 10 s window only the newest step's counters
    # are written, and their totals are those of writing every step.
    ticks = [[step(1_780_000_000 + s) for s in range(10)] for _ in range(2)]
    settings.TELEMETRY_RAW_FRAME_SECONDS = 0
    every = [serving_rows(cluster, tick, memo) for memo in [{}] for tick in ticks]
    settings.TELEMETRY_RAW_FRAME_SECONDS = 10
    thinned = [serving_rows(cluster, tick, memo) for memo in [{}] for tick in ticks]

    for all_rows, kept in zip(every, thinned, strict=True):
        assert {ts for ts, _ in kept} == {1_780_000_009}
        assert len(kept) * 10 == len(all_rows)
        newest = {row for ts, row in all_rows if ts == 1_780_000_009}
        assert {row for _, row in kept} == newest
    assert totals(thinned[1])["serving_requests_success_total"] == pytest.approx(2 * 10 * 600.0)


@pytest.mark.django_db
def test_steps_a_window_apart_are_all_written(cluster, settings):
    settings.TELEMETRY_RAW_FRAME_SECONDS = 10
    rows = serving_rows(cluster, [step(1_780_000_000 + 10 * s) for s in range(3)], {})
    assert {ts for ts, _ in rows} == {1_780_000_000, 1_780_000_010, 1_780_000_020}
