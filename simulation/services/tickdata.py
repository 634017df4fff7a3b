"""What one tick produces, in the two shapes the store takes: sparse rows and dense frames.

Per-card, per-link and per-node metrics are arrays over thousands of entities: they go to
frames. Everything else (cluster, supernode, rack, memory pool, workload metrics) is a few
thousand rows. Both are written in the tick's transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from django.conf import settings

from inventory.models import Cluster
from simulation.engine import METRICS, Engine
from simulation.services.runs import engine_catalogue_sync
from simulation.services.serving_export import serving_rows
from telemetry.receivers.twin import (
    entities_resolve,
    frames_write_many,
    layout_for_keys,
    metrics_by_name,
    samples_write,
    serving_catalogue_ensure,
)

# Every kind with one value per entity goes to frames; only cluster-wide scalars stay rows.
DENSE_KINDS = ("accelerator", "link", "node", "rack", "supernode", "memory_pool", "workload")
SPARSE_KINDS = tuple(sorted({m.entity_kind for m in METRICS} - set(DENSE_KINDS)))
Row = tuple[str, str, str, float]  # (metric, entity kind, entity key, value)


@dataclass
class StepData:
    """One engine step's telemetry at wall-clock time ``ts``."""

    ts: float
    rows: list[Row] = field(default_factory=list)
    dt: float = 0.0  # simulated seconds the step covers
    # kind -> (entity keys, {metric name: values aligned with the keys})
    dense: dict[str, tuple[list[str], dict[str, np.ndarray]]] = field(default_factory=dict)
    # The step's sampled-request histograms, rows aligned with the workload keys (exported as
    # serving bucket counters by ``serving_export``; never stored as frames).
    serving_hist: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def size(self) -> int:
        dense = sum(
            int(np.count_nonzero(~np.isnan(v)))
            for _, arrays in self.dense.values()
            for v in arrays.values()
        )
        return len(self.rows) + dense


def engine_steps(engine: Engine, steps: int, tick_time: float) -> list[StepData]:
    """Step ``steps`` times, stamping each step at wall-clock time within the tick interval.

    The twin runs faster than real time; charts of the last hour show what it simulated.
    """
    out = []
    for i in range(steps):
        snapshot = engine.step()
        data = StepData(
            ts=tick_time - (steps - 1 - i) * settings.TWIN_TICK_SECONDS / steps,
            dt=float(engine.scenario.step_seconds),
            serving_hist=snapshot.serving_hist,
        )
        data.rows = list(snapshot.rows(kinds=SPARSE_KINDS))
        for kind in DENSE_KINDS:
            arrays = {
                name: np.asarray(value, dtype=float)
                for name, value in snapshot.values.get(kind, {}).items()
            }
            if arrays:
                data.dense[kind] = (snapshot.keys(kind), arrays)
        out.append(data)
    return out


def step_data_write(cluster: Cluster, steps: list[StepData], memo: dict | None = None) -> int:
    """Write the steps' rows and frames (caller holds the transaction); returns values.

    ``memo`` is the engine's (``resident.engine_memo``): what its earlier ticks wrote."""
    # Serving histograms as real engines export them (one gate path for twin and real).
    served = serving_rows(cluster, steps, memo)
    names = {row[0] for data in steps for row in data.rows} | {
        name for data in steps for _, arrays in data.dense.values() for name in arrays
    }
    names |= {row[0] for _, row in served}
    metrics = metrics_by_name(names)
    if len(metrics) < len(names):
        engine_catalogue_sync()
        serving_catalogue_ensure(names)
        metrics = metrics_by_name(names)
    entity_refs = {(row[1], row[2]) for data in steps for row in data.rows}
    entity_refs |= {(row[1], row[2]) for _, row in served}
    entities = entities_resolve(cluster, entity_refs)
    rows = [
        (metrics[m].id, entities[(kind, key)], data.ts, float(v))
        for data in steps
        for m, kind, key, v in data.rows
    ]
    rows += [(metrics[m].id, entities[(kind, key)], ts, v) for ts, (m, kind, key, v) in served]
    samples_write(rows)
    by_kind: dict[str, list] = {}
    for data in steps:
        for kind, (keys, arrays) in data.dense.items():
            values = {metrics[name].id: array for name, array in arrays.items()}
            by_kind.setdefault(kind, [keys, []])[1].append((data.ts, values))
    for kind, (keys, batches) in by_kind.items():
        frames_write_many(layout=layout_for_keys(cluster, kind, keys), batches=batches)
    return sum(data.size for data in steps) + len(served)
