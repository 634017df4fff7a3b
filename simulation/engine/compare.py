"""Run ``split`` and ``unified`` on the same workload (the ``compare`` command).

Both policies get the identical scenario (same seed, jobs, services, faults); only
``Policy.name`` differs. With two or more CPUs the runs (both policies, every seed) go to
a pool of processes, one per CPU.
"""

from __future__ import annotations

import dataclasses
import math
import multiprocessing as mp
import os
import queue
import random
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from .engine import Engine
from .scenario.defaults import default_scenario
from .scenario.types import Scenario
from .traces import parse_start, read_philly

MAX_TRACE_JOBS = 20_000


def apply_inference_trace(
    scen: Scenario,
    path: Path,
    smooth_s: float = 900.0,
    *,
    kind: str = "azure",
    horizon_s: float | None = None,
    rate_scale: float = 1.0,
    start_s: float = 0.0,
    loop: bool = False,
    model: str | None = None,
    truncate: bool = False,
    replicas: int | None = None,
) -> Scenario:
    """Replay the trace time-faithfully (see :mod:`.replay`); ``smooth_s`` is ignored.

    Requests arrive at their own timestamps with their own token counts; the services are
    replaced by one trace-driven service that autoscales. ``horizon_s`` defaults to the
    replayed span of the trace (24 h with ``loop``); demand after the trace ends is zero.
    """
    from .replay import apply_replay, load_trace

    del smooth_s  # kept for callers of the old shape-only replay
    if horizon_s is None:
        if loop:
            horizon_s = 24 * 3600.0
        else:
            tr, _ = load_trace(kind, Path(path))
            span = float(tr.t.max()) if tr.t.size else 0.0
            horizon_s = max((span - start_s) / rate_scale, scen.step_seconds)
    out, _ = apply_replay(
        scen,
        kind,
        Path(path),
        horizon_s=horizon_s,
        rate_scale=rate_scale,
        start_s=start_s,
        loop=loop,
        model=model,
        truncate=truncate,
        replicas=replicas,
    )
    return out


def apply_training_trace(
    scen: Scenario, path: Path, horizon_s: float, start: str | float | None = None
) -> Scenario:
    """Replace the training jobs by the trace's jobs submitted in ``[start, start + horizon)``.

    Time-faithful: each job arrives at its own timestamp (minus ``start``, an offset like
    ``40d`` or a date, see :func:`.traces.parse_start`). Size from ``num_gpus`` (capped at
    half the cluster); work = trace duration x the job's modelled rate on that size, so an
    elastic job given more cards finishes sooner. Elastic bounds come from optional
    ``min_gpus`` / ``max_gpus`` columns; otherwise a job is rigid (the trace does not say).
    """
    from .scenario.defaults import training_jobs_from_demand
    from .scenario.training_demand import JOB_SIZE_MIX

    rows, _ = load_training_trace(path, horizon_s, start)
    cap = max(scen.topology.cards // 2, 1)
    demand = []
    for r in rows:
        cards = min(r.num_gpus, cap)
        params = [p for c, _, p in JOB_SIZE_MIX if c <= cards][-1]
        demand.append(
            {"cards": cards, "params": params, "submit": r.timestamp, "duration": r.duration}
        )
    jobs = training_jobs_from_demand(demand, scen.topology, random.Random(scen.seed))
    for job, r in zip(jobs, rows, strict=True):
        job.name = "trace-" + job.name.split("-", 1)[1]
        lo = min(r.min_gpus or job.min_cards, job.min_cards)
        hi = min(max(r.max_gpus or job.min_cards, job.min_cards), scen.topology.cards)
        job.min_cards, job.max_cards = lo, hi
    return dataclasses.replace(scen, training_jobs=jobs)


def load_training_trace(path: Path, horizon_s: float, start: str | float | None = None):
    """(jobs submitted in the replay window with times relative to it, summary dict)."""
    allrows = read_philly(path)
    off = parse_start(None if start is None else str(start), allrows)
    rows = []
    for r in allrows:
        if off <= r.timestamp < off + horizon_s:
            rows.append(dataclasses.replace(r, timestamp=r.timestamp - off))
    rows = rows[:MAX_TRACE_JOBS]
    if not rows:
        span = max((r.timestamp for r in allrows), default=0.0) / 86400.0
        raise ValueError(
            f"{path}: no training jobs submitted in the replayed window "
            f"(start {off / 86400.0:.2f} d, {horizon_s / 3600.0:g} h; the trace spans "
            f"{span:.2f} d: use --start)"
        )
    return rows, training_trace_summary(rows, len(allrows), off)


def training_trace_summary(rows, total_rows: int, offset_s: float) -> dict:
    """Jobs, GPU hours and size mix of the replayed window."""
    buckets = (("1", 1, 1), ("2-4", 2, 4), ("5-8", 5, 8), ("9-32", 9, 32), ("33-128", 33, 128))
    mix = {k: sum(1 for r in rows if lo <= r.num_gpus <= hi) for k, lo, hi in buckets}
    mix[">128"] = sum(1 for r in rows if r.num_gpus > 128)
    return {
        "training_jobs_submitted": len(rows),
        "trace_rows": total_rows,
        "start_offset_days": offset_s / 86400.0,
        "gpu_hours": sum(r.num_gpus * r.duration for r in rows) / 3600.0,
        "size_mix": mix,
    }


def describe_training_trace(summary: dict) -> str:
    """The one-paragraph summary printed before a replay."""
    mix = ", ".join(f"{k}: {v}" for k, v in summary["size_mix"].items())
    return (
        f"training trace: {summary['training_jobs_submitted']} jobs submitted in the window "
        f"(of {summary['trace_rows']} rows, start +{summary['start_offset_days']:.2f} d), "
        f"{summary['gpu_hours']:,.0f} GPU hours; GPUs per job: {mix}"
    )


def build_compare_scenario(
    cards: int,
    hours: float,
    seed: int,
    inference_trace: Path | None,
    training_trace: Path | None,
    start: str | None = None,
    *,
    trace_kind: str = "azure",
    rate_scale: float = 1.0,
    start_s: float = 0.0,
    loop: bool = False,
    trace_model: str | None = None,
    truncate: bool = False,
    trace_replicas: int | None = None,
    **scenario_kw,
) -> Scenario:
    """The shared workload for both policies (``scenario_kw`` go to :func:`default_scenario`)."""
    scen = default_scenario(cards, seed, hours=hours, **scenario_kw)
    if inference_trace is not None:
        scen = apply_inference_trace(
            scen,
            inference_trace,
            kind=trace_kind,
            horizon_s=hours * 3600.0,
            rate_scale=rate_scale,
            start_s=start_s,
            loop=loop,
            model=trace_model,
            truncate=truncate,
            replicas=trace_replicas,
        )
    if training_trace is not None:
        scen = apply_training_trace(scen, training_trace, hours * 3600.0, start)
    return scen


def run_policy(
    scen: Scenario, policy: str, hours: float, progress: Callable[[int, int], None] | None = None
) -> dict:
    """Run one policy for ``hours`` and return its summary."""
    # ``replace`` re-runs ``__post_init__``, which validates the new policy (a round trip
    # through ``to_dict``/``from_dict`` did the same at ~0.6 s per 10,240-card day).
    s = dataclasses.replace(scen, policy=dataclasses.replace(scen.policy, name=policy))
    eng = Engine(s)
    eng.run_until(hours * 3600.0, progress)
    return eng.summary()


POLICIES = ("split", "unified")


def _worker(args: tuple) -> tuple[tuple, dict]:
    scen, policy, hours, queue, key = args
    every = 10

    def cb(i: int, n: int) -> None:
        if i % every == 0 or i == n:
            queue.put((key, i, n))

    return key, run_policy(scen, policy, hours, cb)


def _steps(scen: Scenario, hours: float) -> int:
    return max(math.ceil(hours * 3600.0 / scen.step_seconds - 1e-9), 0)


def run_compare_seeds(
    scens: dict[int, Scenario],
    hours: float,
    progress: Callable[[int, int], None] | None = None,
    parallel: bool | None = None,
    workers: int | None = None,
) -> dict[int, dict[str, dict]]:
    """Both policies on each seed's scenario: ``{seed: {policy: summary}}``.

    In parallel (the default with two or more CPUs) every (seed, policy) run is one task of
    one process pool with a worker per CPU, so three seeds keep both CPUs of a 2-core
    machine busy until the last run, not one pair at a time. Each run is a pure function of
    its scenario and policy, so the figures are those of the serial runs bit for bit.
    ``progress(done, total)`` counts the steps of all runs.
    """
    tasks = [(seed, pol) for seed in scens for pol in POLICIES]
    steps = {seed: _steps(sc, hours) for seed, sc in scens.items()}
    total = sum(steps[seed] for seed, _ in tasks)
    cpus = os.cpu_count() or 1
    if parallel is None:
        parallel = cpus >= 2
    out: dict[int, dict[str, dict]] = {seed: {} for seed in scens}
    if not parallel:
        before = 0
        for seed, pol in tasks:

            def cb(i: int, n: int, before: int = before) -> None:
                progress(before + i, total)

            out[seed][pol] = run_policy(scens[seed], pol, hours, None if progress is None else cb)
            before += steps[seed]
        return out
    n_workers = max(1, min(workers or cpus, len(tasks)))
    ctx = mp.get_context("spawn")
    with ctx.Manager() as mgr:
        q = mgr.Queue()
        with ProcessPoolExecutor(max_workers=n_workers, mp_context=ctx) as pool:
            # The scenario object itself goes to the worker (pickled between this program's own
            # processes): no dict round trip and re-validation per task.
            futs = [pool.submit(_worker, (scens[k[0]], k[1], hours, q, k)) for k in tasks]
            done = dict.fromkeys(tasks, 0)
            while not all(f.done() for f in futs) or not q.empty():
                try:
                    key, i, _ = q.get(timeout=0.1)
                    done[tuple(key)] = i
                    if progress is not None:
                        progress(sum(done.values()), total)
                except queue.Empty:
                    pass
            for f in futs:
                (seed, pol), summary = f.result()
                out[seed][pol] = summary
    return {seed: {pol: out[seed][pol] for pol in POLICIES} for seed in scens}


def run_compare(
    scen: Scenario,
    hours: float,
    progress: Callable[[int, int], None] | None = None,
    parallel: bool | None = None,
) -> dict[str, dict]:
    """Both policies on ``scen``; ``progress(done, total)`` counts steps of both runs."""
    return run_compare_seeds({scen.seed: scen}, hours, progress, parallel)[scen.seed]
