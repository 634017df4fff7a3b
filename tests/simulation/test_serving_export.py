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
