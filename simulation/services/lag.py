"""Tick lag as telemetry, so dashboards and alert rules see it like any other metric."""

from __future__ import annotations

import time

from django.conf import settings
from django.db import transaction

from simulation.models import TwinRun
from telemetry.write import catalogue_sync, entities_resolve, metrics_by_name, samples_write

LAG_METRIC = (
    "twin_tick_lag_seconds",
    "seconds",
    "cluster",
    "gauge",
    "How far the twin's last committed tick is behind its schedule (0 = on time).",
)


def tick_lag_seconds(run: TwinRun, now: float) -> float:
    """Seconds beyond one tick interval since the last committed scheduler tick."""
    if run.last_tick_at is None:
        return 0.0
    return max(0.0, now - run.last_tick_at.timestamp() - settings.TWIN_TICK_SECONDS)


def tick_lag_record(*, run: TwinRun, now: float | None = None) -> float:
    now = now if now is not None else time.time()
    lag = tick_lag_seconds(run, now)
    with transaction.atomic():
        metrics = metrics_by_name([LAG_METRIC[0]])
        if not metrics:
            catalogue_sync((LAG_METRIC,))
            metrics = metrics_by_name([LAG_METRIC[0]])
        entity = entities_resolve(run.cluster, {("cluster", "cluster")})[("cluster", "cluster")]
        samples_write([(metrics[LAG_METRIC[0]].id, entity, now, lag)])
    return lag
