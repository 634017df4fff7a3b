"""Advancing a twin run exactly once per tick: the scheduler tick and the memory-pool tick.

Both kinds lock the run row for their whole duration, so they never mutate a run's state at
the same time, and each commits its telemetry, its sequence number and its TwinTick row (with
the tick's inputs: the journal) in one transaction, plus a checkpoint of the engine state
every ``TWIN_CHECKPOINT_TICKS`` ticks. The engine itself stays resident in the worker between
ticks (``resident.py``); a worker without it rebuilds it from the checkpoint and the journal.
A duplicate delivery or a second beat finds the sequence moved on and does nothing; a worker
killed mid-tick commits nothing and the redelivered task performs the tick. A tick never
catches up on missed time: after an outage it steps once and stamps its data at the present;
the first tick after a gap records the gap (``gaps.py``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from rollout.selectors import traffic_shares_for_cluster
from simulation.engine import Engine
from simulation.models import TwinRun, TwinTick
from simulation.services.gaps import gap_record
from simulation.services.resident import (
    checkpoint_if_due,
    engine_keep,
    engine_memo,
    engine_take,
)
from simulation.services.tickdata import Row, StepData, engine_steps, step_data_write
from telemetry.catalogue.heartbeats import heartbeat_record


@dataclass(frozen=True)
class TickOutcome:
    committed: bool
    seq: int
    samples: int = 0
    reason: str = ""


class UnreadableState(Exception):
    """The run's saved engine state cannot be read by this engine (the run was paused)."""


def _engine_of(run: TwinRun) -> Engine:
    """The run's engine (resident, or rebuilt from checkpoint + journal); an unreadable state
    pauses the run and records why, once, instead of failing every tick (call inside the
    tick's transaction, with the row locked)."""
    try:
        return engine_take(run)[0]
    except ValueError as exc:
        run.status = TwinRun.Status.PAUSED
        run.last_error = str(exc)[:500]
        run.save(update_fields=["status", "last_error"])
        raise UnreadableState(str(exc)) from exc


def _locked_run(run_id: int) -> TwinRun:
    # The checkpoint and the scenario are large and only needed when the engine is rebuilt.
    return (
        TwinRun.objects.select_for_update()
        .select_related("cluster")
        .defer("state", "scenario")
        .get(pk=run_id)
    )


def _fault_injection_pause() -> None:
    # Lets the kill-mid-tick test SIGKILL a worker after the telemetry is written but before
    # the commit; zero (no pause) everywhere else.
    if settings.TWIN_TICK_FAULT_PAUSE_SECONDS:
        time.sleep(settings.TWIN_TICK_FAULT_PAUSE_SECONDS)


def twin_tick(*, run_id: int, expected_seq: int, tick_time: float | None = None) -> TickOutcome:
    """Advance ``run_id`` by one scheduler tick if it is still at ``expected_seq``."""
    started = time.perf_counter()
    tick_time = tick_time if tick_time is not None else time.time()
    with transaction.atomic():
        run = _locked_run(run_id)
        if run.tick_seq != expected_seq:
            return TickOutcome(False, run.tick_seq, reason="already committed")
        if run.status != TwinRun.Status.RUNNING:
            return TickOutcome(False, run.tick_seq, reason="paused")
        try:
            engine = _engine_of(run)
        except UnreadableState as exc:
            return TickOutcome(False, run.tick_seq, reason=str(exc))
        shares = traffic_shares_for_cluster(cluster_id=run.cluster_id)
        for name, share in shares.items():
            engine.set_traffic_share(name, share)
        steps = engine_steps(engine, run.steps_per_tick, tick_time)
        written = step_data_write(run.cluster, steps, engine_memo(engine))
        _fault_injection_pause()
        written = tick_finish(
            run,
            engine,
            rows_written=written,
            started=started,
            first_ts=steps[0].ts,
            inputs={"shares": shares, "steps": run.steps_per_tick},
        )
    return TickOutcome(True, expected_seq + 1, samples=written)


def tick_finish(
    run: TwinRun,
    engine: Engine,
    *,
    rows_written: int,
    started: float,
    first_ts: float,
    inputs: dict,
) -> int:
    """Record a gap before this tick if any, move the sequence on, journal the tick's inputs,
    checkpoint the engine when due, and keep it resident after the commit (inside the lock).
    Returns the values written, the gap's sample included.
    """
    if gap_record(run, first_ts=first_ts, seq=run.tick_seq + 1) is not None:
        rows_written += 1
    run.sim_time = engine.t
    run.tick_seq += 1
    run.last_tick_at = timezone.now()
    checkpoint = checkpoint_if_due(run, engine)
    run.last_tick_ms = (time.perf_counter() - started) * 1000
    run.save(update_fields=["sim_time", "tick_seq", "last_tick_at", "last_tick_ms", *checkpoint])
    TwinTick.objects.create(
        run=run,
        kind=TwinTick.Kind.SCHEDULER,
        seq=run.tick_seq,
        sim_time=run.sim_time,
        samples=rows_written,
        duration_ms=run.last_tick_ms,
        inputs=inputs,
    )
    engine_keep(run, engine)
    heartbeat_record(kind="tick", name=f"scheduler:{run.name}")
    return rows_written


# Memory-pool aggregates (per supernode) → catalogue metrics. Ratios need two arrays.
_POOL_BYTES = {
    "hbm_reserved": "memory_pool_hbm_reserved_bytes",
    "hbm_live": "memory_pool_hbm_live_bytes",
    "free": "memory_pool_hbm_free_bytes",
    "kv_live": "memory_pool_kv_live_bytes",
    "kv_allocated": "memory_pool_kv_allocated_bytes",
    "prefix_cache": "memory_pool_prefix_cache_bytes",
    "dram_used": "memory_pool_dram_used_bytes",
}


def pool_rows(engine: Engine, aggregates: dict[str, np.ndarray], seconds: float) -> list[Row]:
    keys = [engine.idx.supernode_key(s) for s in range(engine.idx.n_supernodes)]
    rows: list[Row] = []
    for source, metric in _POOL_BYTES.items():
        rows += [
            (metric, "memory_pool", k, float(v))
            for k, v in zip(keys, aggregates[source], strict=True)
        ]
    for key, hits, lookups, failures, evictions in zip(
        keys,
        aggregates["hits"],
        aggregates["lookups"],
        aggregates["alloc_failures"],
        aggregates["evictions"],
        strict=True,
    ):
        if lookups > 0:
            rows.append(("memory_pool_kv_hit_ratio", "memory_pool", key, float(hits / lookups)))
        rows.append(
            (
                "memory_pool_allocation_failures_per_second",
                "memory_pool",
                key,
                float(failures / seconds),
            )
        )
        rows.append(
            ("memory_pool_kv_evictions_per_second", "memory_pool", key, float(evictions / seconds))
        )
    return rows


def twin_pool_tick(*, run_id: int, expected_seq: int) -> TickOutcome:
    """Advance only the memory pool of ``run_id`` (KV-cache dynamics within the placement)."""
    started = time.perf_counter()
    with transaction.atomic():
        run = _locked_run(run_id)
        if run.pool_seq != expected_seq:
            return TickOutcome(False, run.pool_seq, reason="already committed")
        if run.status != TwinRun.Status.RUNNING or run.tick_seq == 0:
            # Before the first scheduler tick nothing is placed, so there is no pool to tick.
            return TickOutcome(False, run.pool_seq, reason="paused or not started")
        try:
            engine = _engine_of(run)
        except UnreadableState as exc:
            return TickOutcome(False, run.pool_seq, reason=str(exc))
        seconds = (
            run.steps_per_tick
            * engine.scenario.step_seconds
            * settings.TWIN_POOL_TICK_SECONDS
            / settings.TWIN_TICK_SECONDS
        )
        data = StepData(ts=time.time())
        data.rows = pool_rows(engine, engine.step_memory_pool(seconds), seconds)
        written = step_data_write(run.cluster, [data])
        run.pool_seq += 1
        run.last_pool_tick_at = timezone.now()
        checkpoint = checkpoint_if_due(run, engine)
        run.save(update_fields=["pool_seq", "last_pool_tick_at", *checkpoint])
        TwinTick.objects.create(
            run=run,
            kind=TwinTick.Kind.POOL,
            seq=run.pool_seq,
            sim_time=run.sim_time,
            samples=written,
            duration_ms=(time.perf_counter() - started) * 1000,
            inputs={"seconds": seconds},
        )
        engine_keep(run, engine)
        heartbeat_record(kind="tick", name=f"pool:{run.name}")
    return TickOutcome(True, expected_seq + 1, samples=written)
