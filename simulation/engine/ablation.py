"""What each mechanism buys: split -> +time-sharing -> +preemption/elastic -> +pooled memory ->
full unified, on the same workload and the same card count (``compare --ablate``).

Each row is a normal policy summary (the same keys ``compare`` reports for ``split`` and
``unified``, whatever summary keys exist) plus ``name``, ``placement`` and ``features``. The
steps add one group of :class:`.scenario.features.Features` at a time on the partitioned
placement; the last row switches to the shared pool (``unified`` with its preset), so the
difference between the last two rows is what the placement rule itself buys.
"""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
from collections.abc import Callable

from .compare import run_policy
from .scenario.features import Features
from .scenario.types import Scenario
from .sched.policy import FEATURE_PRESETS

STEPS: tuple[tuple[str, str, dict], ...] = (
    ("split", "split", {}),
    ("+time-sharing", "split", {"time_sharing": True}),
    ("+preemption/elastic", "split", {"time_sharing": True, "preemption": True, "elastic": True}),
    (
        "+pooled memory",
        "split",
        {
            "time_sharing": True,
            "preemption": True,
            "elastic": True,
            "pooled_memory": True,
            "weight_cache": True,
        },
    ),
    ("unified", "unified", None),
)


def ablation_scenarios(scen: Scenario) -> list[tuple[str, Scenario]]:
    """(row name, scenario) for every step; the base scenario's feature parameters are kept."""
    base = scen.policy.features or FEATURE_PRESETS["split"]
    out = []
    for name, placement, flags in STEPS:
        if flags is None:
            feats = dataclasses.replace(
                FEATURE_PRESETS[placement],
                pool_hbm_ceiling=base.pool_hbm_ceiling,
                weight_cache_bandwidth_bytes_per_s=base.weight_cache_bandwidth_bytes_per_s,
                storage_bandwidth_bytes_per_s=base.storage_bandwidth_bytes_per_s,
            )
        else:
            feats = dataclasses.replace(
                base,
                **{
                    k: False
                    for k in (
                        "time_sharing",
                        "preemption",
                        "elastic",
                        "pooled_memory",
                        "weight_cache",
                    )
                },
            )
            feats = dataclasses.replace(feats, **flags)
        pol = dataclasses.replace(scen.policy, name=placement, features=feats)
        out.append((name, Scenario.from_dict(dataclasses.replace(scen, policy=pol).to_dict())))
    return out


def _one(args: tuple) -> dict:
    name, scen_dict, hours = args
    s = Scenario.from_dict(scen_dict)
    row = run_policy(s, s.policy.name, hours)
    return _row(name, s, row)


def _row(name: str, s: Scenario, summary: dict) -> dict:
    f = s.policy.features or Features()
    row = {"name": name, "placement": s.policy.name}
    row["features"] = {
        k: getattr(f, k)
        for k in (
            "time_sharing",
            "preemption",
            "elastic",
            "pooled_memory",
            "weight_cache",
            "prefix_reuse",
        )
    }
    row.update(summary)
    return row


def run_ablation(
    scen: Scenario,
    hours: float,
    progress: Callable[[int, int], None] | None = None,
    parallel: bool | None = None,
) -> list[dict]:
    """Run every ablation step for ``hours``; a list of rows (pure: no files, no globals).

    ``progress(done, total)`` counts finished rows. With ``parallel`` (default: two or more
    CPUs) the rows run in two processes; the figures are identical either way.
    """
    items = [(n, s.to_dict(), hours) for n, s in ablation_scenarios(scen)]
    total = len(items)
    if parallel is None:
        parallel = (mp.cpu_count() or 1) >= 2
    if not parallel:
        rows = []
        for i, it in enumerate(items):
            rows.append(_one(it))
            if progress is not None:
                progress(i + 1, total)
        return rows
    ctx = mp.get_context("spawn")
    with ctx.Pool(2) as pool:
        rows = []
        for i, r in enumerate(pool.imap(_one, items)):
            rows.append(r)
            if progress is not None:
                progress(i + 1, total)
    return rows
