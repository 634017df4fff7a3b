"""What a day/night calendar would have done: a cluster's own job history replayed through the
twin under the calendar now in force and under a proposed one (issue 32 item 6).

Pure engine code (no Django). The caller hands the history as demand rows (``cards``,
``submit`` seconds from the replay start, ``duration`` seconds the job ran) and the inference
partition's share of the cards. Both runs use the ``split`` policy with the inference
partition fixed at that share and time-sharing on: in the night window idle inference cards
join training (the twin's mechanism for what the DAILY reservation ends each night); a
calendar of ``None`` means no night window (inference holds its cards around the clock). The
runs of one seed share the workload (a paired comparison); each figure's proposed − current
difference is reported with its Student-t 95 % interval over the seeds
(:func:`.spread.stats`).

Stated approximations: inference demand is the twin's default fleet for the cluster's size,
not the cluster's own traffic (the scheduler reports no requests); a job's work is its
measured run time at the size it had; a cluster under the twin's 64-card minimum is modelled
with its history repeated to keep the load per card.
"""

from __future__ import annotations

import dataclasses
import math
import random

from .engine import Engine
from .scenario.defaults import default_scenario, training_jobs_from_demand
from .scenario.features import Features
from .scenario.training_demand import JOB_SIZE_MIX
from .spread import stats

MIN_CARDS = 64
FIGURES = (
    "utilization_allocated_mean",
    "utilization_busy_mean",
    "queue_wait_h_mean",
    "slo_attainment",
    "core_slo_attainment",
    "completed_jobs",
)


def _run(scen, night: tuple[float, float] | None, hours: float) -> dict:
    policy = dataclasses.replace(scen.policy, night_window=night)
    eng = Engine(dataclasses.replace(scen, policy=policy))
    eng.run_until(hours * 3600.0)
    summary = eng.summary()
    return {k: float(summary[k]) for k in FIGURES if k in summary}


def calendar_replay(
    *,
    cards: int,
    demand: list[dict],
    inference_fraction: float,
    hours: float,
    start_hour: float,
    current_night: tuple[float, float] | None,
    proposed_night: tuple[float, float] | None,
    seeds: tuple[int, ...] = (7, 8, 9),
    step_seconds: float = 300.0,
) -> dict:
    """``{"current": {figure: mean}, "proposed": {…}, "difference": {figure: stats},
    "modelled_cards", "repeat", "jobs"}``."""
    if not demand:
        raise ValueError("no job of the history ran: nothing to replay")
    if not 0.0 < inference_fraction < 1.0:
        raise ValueError(f"inference share must be in (0, 1), got {inference_fraction!r}")
    repeat = max(1, math.ceil(MIN_CARDS / max(cards, 1)))
    modelled = cards * repeat
    rows = []
    for row in demand:
        size = max(1, min(int(row["cards"]), modelled // 2))
        params = [p for c, _, p in JOB_SIZE_MIX if c <= size][-1]
        rows.extend(
            {
                "cards": size,
                "params": params,
                "submit": float(row["submit"]),
                "duration": max(60.0, float(row["duration"])),
            }
            for _ in range(repeat)
        )
    per_seed: dict[int, dict[str, dict]] = {}
    for seed in seeds:
        scen = default_scenario(
            modelled,
            seed,
            policy="split",
            hours=hours,
            faults=False,
            night_window=None,
            step_seconds=step_seconds,
        )
        jobs = training_jobs_from_demand(rows, scen.topology, random.Random(seed))
        policy = dataclasses.replace(
            scen.policy,
            inference_pool_fraction=inference_fraction,
            features=Features(time_sharing=True),
        )
        scen = dataclasses.replace(
            scen, training_jobs=jobs, policy=policy, start_hour=start_hour % 24.0
        )
        per_seed[seed] = {
            "current": _run(scen, current_night, hours),
            "proposed": _run(scen, proposed_night, hours),
        }
    out: dict = {
        "modelled_cards": modelled,
        "repeat": repeat,
        "jobs": len(demand),
        "seeds": list(seeds),
        "hours": hours,
    }
    for which in ("current", "proposed"):
        out[which] = {
            k: sum(per_seed[s][which][k] for s in seeds) / len(seeds)
            for k in per_seed[seeds[0]][which]
        }
    out["difference"] = {
        k: stats([per_seed[s]["proposed"][k] - per_seed[s]["current"][k] for s in seeds])
        for k in out["current"]
    }
    return out
