"""Fanned-out ticks: one task per supernode stages its share, a join commits the tick at once.

Every part steps its own copy of the engine from the same saved state; the engine is
deterministic, so all parts see the same step and the assembled tick equals a single-worker
tick. Parts stage their rows and frame slices (idempotently: one row per part, replaced on
retry), and whichever part finishes last finds all parts staged and asks for the commit. The
commit holds the run lock, assembles the parts, writes them, saves the state and moves the
sequence on in one transaction, so readers never see part of a tick, and a retried part or
commit is harmless. Part 0 also carries the new engine state and the tick-wide rows.
"""

from __future__ import annotations

import time

import numpy as np
from django.db import transaction

from simulation.engine import Engine
from simulation.models import StagedPart, TwinRun
from simulation.services.staged_format import UnreadablePart, part_bytes, part_from_bytes
from simulation.services.tickdata import StepData, engine_steps, step_data_write
from simulation.services.ticks import TickOutcome, UnreadableState, load_engine, tick_finish

GLOBAL_PART = 0  # cluster- and workload-level rows travel with supernode 0's part


def part_of(entity_key: str, supernode_keys: dict[str, int]) -> int:
    return supernode_keys.get(entity_key.split("/", 1)[0], GLOBAL_PART)


def _slice(steps: list[StepData], part: int, supernodes: dict[str, int]) -> list[dict]:
    out = []
    for data in steps:
        dense = {}
        for kind, (keys, arrays) in data.dense.items():
            mine = np.array([part_of(k, supernodes) == part for k in keys])
            dense[kind] = (
                len(keys),
                np.nonzero(mine)[0],
                {name: values[mine] for name, values in arrays.items()},
            )
        out.append(
            {
                "ts": data.ts,
                "rows": [r for r in data.rows if part_of(r[2], supernodes) == part],
                "dense": dense,
            }
        )
    return out


def tick_stage_part(*, run_id: int, expected_seq: int, part: int, tick_time: float) -> bool:
    """Stage supernode ``part``'s share of tick ``expected_seq``; True when all parts are in."""
    run = TwinRun.objects.select_related("cluster").get(pk=run_id)
    if run.tick_seq != expected_seq or run.status != TwinRun.Status.RUNNING:
        return False
    try:
        engine = load_engine(run)
    except UnreadableState:
        return False  # the run is paused now, with the reason on its page
    supernodes = {engine.idx.supernode_key(s): s for s in range(engine.idx.n_supernodes)}
    steps = engine_steps(engine, run.steps_per_tick, tick_time)
    payload = {"steps": _slice(steps, part, supernodes), "parts": len(supernodes)}
    if part == GLOBAL_PART:
        payload["state"] = engine.save_state()
        payload["keys"] = {kind: keys for kind, (keys, _) in steps[0].dense.items()}
    blob = part_bytes(payload)
    with transaction.atomic():
        StagedPart.objects.filter(run=run, seq=expected_seq, part=part).delete()
        StagedPart.objects.create(run=run, seq=expected_seq, part=part, payload=blob)
    return StagedPart.objects.filter(run=run, seq=expected_seq).count() >= len(supernodes)


def _assemble(parts: list[dict]) -> tuple[list[StepData], bytes]:
    base = next(p for p in parts if "state" in p)
    steps = []
    for i, first in enumerate(base["steps"]):
        data = StepData(ts=first["ts"])
        for kind, keys in base["keys"].items():
            arrays: dict[str, np.ndarray] = {}
            for part in parts:
                size, positions, values = part["steps"][i]["dense"][kind]
                for name, slice_values in values.items():
                    arrays.setdefault(name, np.full(size, np.nan))[positions] = slice_values
            data.dense[kind] = (keys, arrays)
        data.rows = [row for part in parts for row in part["steps"][i]["rows"]]
        steps.append(data)
    return steps, base["state"]


def tick_commit_staged(*, run_id: int, expected_seq: int, parts: int) -> TickOutcome:
    """Commit a fully staged tick exactly once."""
    started = time.perf_counter()
    with transaction.atomic():
        run = TwinRun.objects.select_for_update().select_related("cluster").get(pk=run_id)
        if run.tick_seq != expected_seq:
            StagedPart.objects.filter(run=run, seq__lte=run.tick_seq).delete()
            return TickOutcome(False, run.tick_seq, reason="already committed")
        staged = list(StagedPart.objects.filter(run=run, seq=expected_seq))
        if len(staged) < parts:
            return TickOutcome(False, run.tick_seq, reason="parts missing")
        try:
            payloads = [part_from_bytes(bytes(p.payload)) for p in staged]
        except UnreadablePart as error:
            # Staged by an older version (a tick in flight across an upgrade): drop the parts;
            # the sequence did not move, so the next scheduled tick stages them again.
            StagedPart.objects.filter(run=run, seq=expected_seq).delete()
            return TickOutcome(False, run.tick_seq, reason=f"staged parts unreadable: {error}")
        steps, state = _assemble(payloads)
        written = step_data_write(run.cluster, steps)
        StagedPart.objects.filter(run=run, seq__lte=expected_seq).delete()
        written = tick_finish(
            run,
            Engine.load_state(state),
            rows_written=written,
            started=started,
            first_ts=steps[0].ts,
        )
    return TickOutcome(True, expected_seq + 1, samples=written)
