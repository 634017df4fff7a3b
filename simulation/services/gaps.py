"""Tick gaps: the twin never fabricates telemetry for time in which it could not tick.

When beat could not deliver ticks for a while (the broker was down, every worker was down,
beat itself was stopped), the next tick does **not** catch up by stepping through the missed
wall-clock time: it advances the engine by one ordinary tick and stamps its data at the present.
The interval in between has no twin data at all — and this module makes that visible instead
of silent: the first tick after the gap records a ``TwinGap`` row (shown on /twin/) and a
``twin_tick_gap_seconds`` sample on the cluster (shown on /status/, usable by alert rules),
both in the tick's own transaction, so a retried or duplicate tick records the gap once.
"""

from __future__ import annotations

from datetime import UTC, datetime

from django.conf import settings

from simulation.models import TwinGap, TwinRun
from telemetry.receivers.twin import (
    catalogue_sync,
    entities_resolve,
    metrics_by_name,
    samples_write,
)

GAP_METRIC = (
    "twin_tick_gap_seconds",
    "seconds",
    "cluster",
    "gauge",
    "Length of an interval without twin data (no tick could run), recorded when ticks resume.",
)


def gap_since(run: TwinRun, first_ts: float) -> tuple[float, float] | None:
    """``(start, seconds)`` of the data gap before a tick whose first point is at ``first_ts``.

    None when the tick follows on in time: a gap needs at least one whole tick interval with
    no data beyond the normal spacing of points (one interval over ``steps_per_tick``).
    """
    if run.last_tick_at is None:
        return None  # the first tick of a run follows nothing
    start = max(m for m in (run.last_tick_at, run.resumed_at) if m is not None).timestamp()
    interval = float(settings.TWIN_TICK_SECONDS)
    missing = first_ts - start - interval / max(1, run.steps_per_tick)
    if missing < interval:
        return None
    return start, first_ts - start


def gap_record(run: TwinRun, *, first_ts: float, seq: int) -> TwinGap | None:
    """Record the gap before tick ``seq`` if there is one (caller holds the run's lock)."""
    found = gap_since(run, first_ts)
    if found is None:
        return None
    start, seconds = found
    missed = max(1, round(seconds / settings.TWIN_TICK_SECONDS) - 1)
    gap = TwinGap.objects.create(
        run=run,
        seq=seq,
        started_at=datetime.fromtimestamp(start, UTC),
        ended_at=datetime.fromtimestamp(first_ts, UTC),
        seconds=seconds,
        missed_ticks=missed,
    )
    metrics = metrics_by_name([GAP_METRIC[0]])
    if not metrics:
        catalogue_sync((GAP_METRIC,))
        metrics = metrics_by_name([GAP_METRIC[0]])
    entity = entities_resolve(run.cluster, {("cluster", "cluster")})[("cluster", "cluster")]
    # Stamped where data resumes, never inside the gap.
    samples_write([(metrics[GAP_METRIC[0]].id, entity, first_ts, seconds)])
    return gap
