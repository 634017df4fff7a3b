"""The twin's serving metrics as real engines export them: cumulative histogram counters.

``simulation.engine.serving_histograms`` turns each step's per-service P50/P99 and request
rate into bucket increments; this adds them to each workload's counters as last stored (the
store is the counters' memory, so any worker process can write the next tick and a run
that lost its rows just looks like a restarted engine — a counter reset, which the readers
handle). A resident engine carries the totals it wrote in its memo (``resident.engine_memo``)
and reads the store only for services it has not seen yet: after a rebuild the memo is
empty, so the first tick reads what is stored, as before. The rows go on the workload's own
entity, where ``telemetry.read.serving_window`` reads the twin's histograms with the same
code as a vLLM endpoint's.

With ``TELEMETRY_RAW_FRAME_SECONDS`` set (the demo: one per tick) the counters are written
at most once per that window, at the window's newest step: a cumulative counter's newest
value carries every increment before it, so nothing a window delta or a rate reads is lost,
only points finer than the window. A 4,096-card demo tick of ten steps wrote 14,600 counter
rows per run (20 services x 73 counters x 10 steps), the bulk of the SQLite demo's growth
(BENCHMARKS.md "Demo storage: levelling off").
"""

from __future__ import annotations

import numpy as np
from django.conf import settings

from inventory.models import Cluster
from simulation.engine.serving_histograms import step_increments
from telemetry.read import serving_counters_latest

Row = tuple[str, str, str, float]
TIMEOUTS = "inference_timeouts_total"


def serving_rows(
    cluster: Cluster, steps: list, memo: dict | None = None
) -> list[tuple[float, Row]]:
    """``(ts, (metric, "workload", key, value))`` rows of the steps' serving counters.

    ``memo`` (the engine's, kept between its ticks) holds the totals written so far; the
    store is read only for services it lacks. Without one every call reads the store."""
    # Masks over the workload arrays, not a Python test per workload and bucket: a
    # 10,240-card tick has ~2,000 workloads (most of them training jobs, all NaN here) times
    # every bucket counter, which cost half a second per tick as scalar loops.
    increments = []
    for data in steps:
        keys, arrays = data.dense.get("workload", ([], {}))
        if keys:
            inc = step_increments(arrays, data.dt, data.serving_hist)
            finite = {name: np.flatnonzero(np.isfinite(values)) for name, values in inc.items()}
            increments.append((data, keys, inc, finite, arrays))
    if not increments:
        return []
    serving_keys = sorted(
        {keys[i] for _, keys, _, finite, _ in increments for idx in finite.values() for i in idx}
    )
    if not serving_keys:
        return []
    names = sorted({name for _, _, inc, _, _ in increments for name in inc})
    carried = ({} if memo is None else memo).setdefault("serving_counters", {})
    if carried.get("names") != names:  # a different set of counters: start from the store
        carried.update(names=names, known=set(), totals={})
    totals: dict[tuple[str, str], float] = carried["totals"]
    unseen = [key for key in serving_keys if key not in carried["known"]]
    if unseen:
        totals.update(
            serving_counters_latest(cluster_id=cluster.pk, entity_keys=unseen, names=names)
        )
        carried["known"].update(unseen)
    written = _written_steps([data.ts for data, *_ in increments])
    out: list[tuple[float, Row]] = []
    for index, (data, keys, inc, finite, arrays) in enumerate(increments):
        for name, values in inc.items():
            for i in finite[name].tolist():
                key = keys[i]
                total = totals.get((key, name), 0.0) + float(values[i])
                totals[(key, name)] = total
                if index in written:
                    out.append((data.ts, (name, "workload", key, total)))
        timeouts = arrays.get(TIMEOUTS)
        # The engine's own cumulative counter: failed requests.
        if timeouts is not None and index in written:
            timeouts = np.asarray(timeouts, dtype=float)
            for i in np.flatnonzero(np.isfinite(timeouts)).tolist():
                out.append(
                    (
                        data.ts,
                        ("serving_requests_failed_total", "workload", keys[i], float(timeouts[i])),
                    )
                )
    return out


def _written_steps(times: list[float]) -> set[int]:
    """Indexes of the steps whose counters are written: all of them, or with
    ``TELEMETRY_RAW_FRAME_SECONDS`` the newest step of each such window (newest first, a step
    is kept when at least that much older than the last kept one: the raw frames' rule)."""
    spacing = float(getattr(settings, "TELEMETRY_RAW_FRAME_SECONDS", 0) or 0)
    if spacing <= 0:
        return set(range(len(times)))
    kept: set[int] = set()
    last: float | None = None
    for i in sorted(range(len(times)), key=lambda i: times[i], reverse=True):
        if last is None or last - times[i] >= spacing:
            kept.add(i)
            last = times[i]
    return kept
