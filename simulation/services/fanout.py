"""Fanned-out ticks: one task per supernode stages its share, a join commits the tick at once.

Every part steps its own copy of the engine from the same saved state; the engine is
deterministic, so all parts see the same step and the result equals a single-worker tick.
Parts stage their rows (idempotently: delete then insert their part), and whichever part
finishes last finds all parts staged and asks for the commit. The commit holds the run lock,
moves the staged rows into the store, saves the state and moves the sequence on in one
transaction, so readers never see part of a tick, and a retried part or commit is harmless.
"""

from __future__ import annotations

import time

from django.db import transaction

from monitoring.telemetry.store import samples_write
from simulation.models import StagedSample, TwinRun
from simulation.services.ticks import (
    TickOutcome,
    load_engine,
    resolve_rows,
    step_rows,
    tick_finish,
)

GLOBAL_PART = 0  # cluster- and workload-level rows travel with supernode 0's part


def part_of(entity_key: str, supernode_keys: dict[str, int]) -> int:
    return supernode_keys.get(entity_key.split("/", 1)[0], GLOBAL_PART)


def tick_stage_part(*, run_id: int, expected_seq: int, part: int, tick_time: float) -> bool:
    """Stage supernode ``part``'s rows for tick ``expected_seq``; True when all parts are in."""
    run = TwinRun.objects.select_related("cluster").get(pk=run_id)
    if run.tick_seq != expected_seq or run.status != TwinRun.Status.RUNNING:
        return False
    engine = load_engine(run)
    keys = {engine.idx.supernode_key(s): s for s in range(engine.idx.n_supernodes)}
    mine = [
        (ts, row) for ts, row in step_rows(run, engine, tick_time) if part_of(row[2], keys) == part
    ]
    resolved = resolve_rows(run, mine)
    with transaction.atomic():
        StagedSample.objects.filter(run=run, seq=expected_seq, part=part).delete()
        StagedSample.objects.bulk_create(
            [
                StagedSample(
                    run=run, seq=expected_seq, part=part, metric_id=m, entity_id=e, ts=ts, value=v
                )
                for m, e, ts, v in resolved
            ],
            batch_size=5000,
        )
    return staged_parts(run_id, expected_seq) >= len(keys)


def staged_parts(run_id: int, seq: int) -> int:
    return StagedSample.objects.filter(run_id=run_id, seq=seq).values("part").distinct().count()


def tick_commit_staged(*, run_id: int, expected_seq: int, parts: int) -> TickOutcome:
    """Commit a fully staged tick exactly once."""
    started = time.perf_counter()
    with transaction.atomic():
        run = TwinRun.objects.select_for_update().select_related("cluster").get(pk=run_id)
        if run.tick_seq != expected_seq:
            StagedSample.objects.filter(run=run, seq__lte=run.tick_seq).delete()
            return TickOutcome(False, run.tick_seq, reason="already committed")
        if staged_parts(run_id, expected_seq) < parts:
            return TickOutcome(False, run.tick_seq, reason="parts missing")
        engine = load_engine(run)
        for _ in range(run.steps_per_tick):
            engine.step()  # the same deterministic steps the parts took
        rows = list(
            StagedSample.objects.filter(run=run, seq=expected_seq).values_list(
                "metric_id", "entity_id", "ts", "value"
            )
        )
        samples_write(rows)
        StagedSample.objects.filter(run=run, seq__lte=expected_seq).delete()
        tick_finish(run, engine, rows_written=len(rows), started=started)
    return TickOutcome(True, expected_seq + 1, samples=len(rows))
