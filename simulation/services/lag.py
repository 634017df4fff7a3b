"""Tick lag as telemetry, so dashboards and alert rules see it like any other metric."""

from __future__ import annotations

import time

from django.conf import settings
from django.db import transaction

from simulation.models import TwinRun
from telemetry.receivers.twin import (
    catalogue_sync,
    entities_resolve,
    metrics_by_name,
    samples_write,
)

LAG_METRIC = (
    "twin_tick_lag_seconds",
    "seconds",
    "cluster",
    "gauge",
    "How far the twin's last committed tick is behind its schedule (0 = on time).",
)


def tick_lag_seconds(run: TwinRun, now: float) -> float:
    """Seconds beyond one tick interval since the last committed scheduler tick, or since the
    run was last (re)started if that is later. A paused run is not late: its lag is 0."""
    if run.status != TwinRun.Status.RUNNING:
        return 0.0
    moments = [m for m in (run.last_tick_at, run.resumed_at) if m is not None]
    if not moments:
        return 0.0
    return max(0.0, now - max(moments).timestamp() - settings.TWIN_TICK_SECONDS)


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
