"""Test data: a workload's serving histograms as the twin and vLLM store them (cumulative
bucket counters on the twin's bounds), built from explicit request latencies."""

from __future__ import annotations

import math

from django.db import transaction

from simulation.engine.serving_histograms import STEP_HISTOGRAMS, bucket_name
from telemetry.receivers.twin import samples_write
from tests.cost.cost_data import metric

FIGURE = {
    "ttft": "serving_ttft_seconds",
    "tpot": "serving_tpot_seconds",
    "e2e": "serving_e2e_seconds",
}


def buckets_of(histogram: str, latencies: list[float]) -> list[tuple[float, float]]:
    """Cumulative ``(le, count)`` of ``latencies`` on the export's bounds, +Inf included."""
    bounds = (*STEP_HISTOGRAMS[histogram], math.inf)
    return [(b, float(sum(1 for x in latencies if x <= b))) for b in bounds]


def write_requests(entity, steps: list[tuple[float, dict[str, list[float]]]]) -> None:
    """Counters of ``entity`` at each ``(ts, {figure: latencies of that step's requests})``,
    preceded by zeros one minute before the first step (an increase needs two points)."""
    totals: dict[str, float] = {}
    rows = []

    def emit(ts: float) -> None:
        for name, value in totals.items():
            rows.append((metric(name, "workload").pk, entity.pk, ts, value))

    for histogram in FIGURE.values():
        for bound in (*STEP_HISTOGRAMS[histogram], math.inf):
            totals[bucket_name(histogram, bound)] = 0.0
        totals[f"{histogram}_count"] = totals[f"{histogram}_sum"] = 0.0
    totals["serving_requests_success_total"] = 0.0
    emit(steps[0][0] - 60)
    for ts, figures in steps:
        for key, latencies in figures.items():
            histogram = FIGURE[key]
            for bound, count in buckets_of(histogram, latencies):
                totals[bucket_name(histogram, bound)] += count
            totals[f"{histogram}_count"] += len(latencies)
            totals[f"{histogram}_sum"] += sum(latencies)
        totals["serving_requests_success_total"] += len(figures.get("ttft", []))
        emit(ts)
    with transaction.atomic():
        samples_write(rows)
