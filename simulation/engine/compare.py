"""Run ``split`` and ``unified`` on the same workload (the ``compare`` command).

Both policies get the identical scenario (same seed, jobs, services, faults); only
``Policy.name`` differs. With two or more CPUs the two runs go to two processes.
"""

from __future__ import annotations

import dataclasses
import math
import multiprocessing as mp
import queue
from collections.abc import Callable
from pathlib import Path

from .catalog import get_hardware
from .engine import Engine
from .scenario.defaults import _JOB_SIZES, TENANTS, default_scenario
from .scenario.types import Scenario, TrainingJob
from .traces import read_philly

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
    model: str = "llama-2-70b",
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
    )
    return out


def apply_training_trace(scen: Scenario, path: Path, horizon_s: float) -> Scenario:
    """Replace the training jobs by the trace's jobs submitted within the horizon."""
    rows = [j for j in read_philly(path) if j.timestamp <= horizon_s][:MAX_TRACE_JOBS]
    if not rows:
        raise ValueError(f"{path}: no training jobs within the simulated horizon")
    hw = get_hardware(scen.topology.hardware)
    jobs = []
    for i, r in enumerate(rows):
        cards = min(r.num_gpus, scen.topology.cards // 2)
        params = next(p for size, _, p in _JOB_SIZES if size >= min(cards, 512))
        params = min(params, 0.5 * hw.hbm_bytes * cards / 16.0)
        tok_s = 0.4 * cards * hw.peak_flops / (6 * params)
        jobs.append(
            TrainingJob(
                name=f"trace-{i:05d}",
                tenant=TENANTS[i % len(TENANTS)],
                params=float(params),
                min_cards=cards,
                max_cards=cards,
                work_samples=max(tok_s / 4096 * max(r.duration, 60.0), 1.0),
                base_mfu=0.4,
                submit_time_s=float(r.timestamp),
            )
        )
    return dataclasses.replace(scen, training_jobs=jobs)


def build_compare_scenario(
    cards: int,
    hours: float,
    seed: int,
    inference_trace: Path | None,
    training_trace: Path | None,
    *,
    trace_kind: str = "azure",
    rate_scale: float = 1.0,
    start_s: float = 0.0,
    loop: bool = False,
    trace_model: str = "llama-2-70b",
) -> Scenario:
    """The shared workload for both policies."""
    scen = default_scenario(cards, seed, hours=hours)
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
        )
    if training_trace is not None:
        scen = apply_training_trace(scen, training_trace, hours * 3600.0)
    return scen


def run_policy(
    scen: Scenario, policy: str, hours: float, progress: Callable[[int, int], None] | None = None
) -> dict:
    """Run one policy for ``hours`` and return its summary."""
    s = dataclasses.replace(scen, policy=dataclasses.replace(scen.policy, name=policy))
    s = Scenario.from_dict(s.to_dict())  # re-validate after replace
    eng = Engine(s)
    eng.run_until(hours * 3600.0, progress)
    return eng.summary()


def _worker(args: tuple) -> tuple[str, dict]:
    scen_dict, policy, hours, queue = args
    every = 10

    def cb(i: int, n: int) -> None:
        if i % every == 0 or i == n:
            queue.put((policy, i, n))

    return policy, run_policy(Scenario.from_dict(scen_dict), policy, hours, cb)


def run_compare(
    scen: Scenario,
    hours: float,
    progress: Callable[[int, int], None] | None = None,
    parallel: bool | None = None,
) -> dict[str, dict]:
    """Both policies on ``scen``; ``progress(done, total)`` counts steps of both runs."""
    steps = max(math.ceil(hours * 3600.0 / scen.step_seconds - 1e-9), 0)
    total = 2 * steps
    if parallel is None:
        parallel = (mp.cpu_count() or 1) >= 2
    if not parallel:
        out = {}
        for k, pol in enumerate(("split", "unified")):
            out[pol] = run_policy(
                scen,
                pol,
                hours,
                None if progress is None else (lambda i, n, k=k: progress(k * steps + i, total)),
            )
        return out
    ctx = mp.get_context("spawn")
    with ctx.Manager() as mgr:
        q = mgr.Queue()
        with ctx.Pool(2) as pool:
            res = pool.map_async(
                _worker, [(scen.to_dict(), p, hours, q) for p in ("split", "unified")]
            )
            done = {"split": 0, "unified": 0}
            while not res.ready() or not q.empty():
                try:
                    pol, i, _ = q.get(timeout=0.1)
                    done[pol] = i
                    if progress is not None:
                        progress(sum(done.values()), total)
                except queue.Empty:
                    pass
            return dict(res.get())
