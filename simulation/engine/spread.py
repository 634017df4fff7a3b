"""Spread over seeds (issue 25 part 4): every compared figure as mean, range and a 95 % CI.

A comparison run once is one draw of the workload (job arrivals, service noise, faults): seed 7
and seed 8 of the same default scenario can differ several-fold in a tail latency. So
``compare --seeds N`` runs both policies on N seeds (the same seed for both policies: a paired
comparison) and reports, per policy and for the unified − split difference, the mean, the
min/max and a Student-t 95 % confidence interval of the mean.
"""

from __future__ import annotations

import math
from collections.abc import Callable

# Two-sided 95 % Student-t quantiles for n - 1 degrees of freedom (n = 2..30); beyond: 1.96.
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045)  # fmt: skip


def stats(values: list[float]) -> dict[str, float | None]:
    """Mean, min, max, standard deviation and 95 % CI bounds of ``values`` (None for one)."""
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    t = _T95[n - 2] if 2 <= n <= 30 else 1.96
    # One value has no interval: None (JSON null; NaN is not valid JSON nor storable).
    half = t * sd / math.sqrt(n) if n > 1 else None
    return {
        "mean": mean,
        "min": min(values),
        "max": max(values),
        "sd": sd,
        "ci95_low": None if half is None else mean - half,
        "ci95_high": None if half is None else mean + half,
        "n": n,
    }


def _numeric(summary: dict) -> dict[str, float]:
    return {
        k: float(v)
        for k, v in summary.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    }


def combine(runs: dict[int, dict[str, dict]]) -> dict:
    """``{seed: {policy: summary}}`` -> means per policy plus ``spread`` and ``seeds``.

    The policy entries keep the summary keys (now means over seeds), so readers of a one-seed
    result keep working; ``spread[policy][key]`` and ``spread["unified_minus_split"][key]``
    hold :func:`stats` (the difference is paired by seed).
    """
    seeds = sorted(runs)
    policies = list(runs[seeds[0]])
    out: dict = {"seeds": seeds, "spread": {}}
    for pol in policies:
        nums = [_numeric(runs[s][pol]) for s in seeds]
        keys = [k for k in nums[0] if all(k in x for x in nums)]
        sp = {k: stats([x[k] for x in nums]) for k in keys}
        out["spread"][pol] = sp
        out[pol] = {**runs[seeds[0]][pol], **{k: v["mean"] for k, v in sp.items()}}
    if {"split", "unified"} <= set(policies):
        a = [_numeric(runs[s]["split"]) for s in seeds]
        b = [_numeric(runs[s]["unified"]) for s in seeds]
        keys = [k for k in a[0] if all(k in x for x in a + b)]
        out["spread"]["unified_minus_split"] = {
            k: stats([y[k] - x[k] for x, y in zip(a, b, strict=True)]) for k in keys
        }
        from .headline import headline  # local import: headline uses stats from here

        out["headline"] = headline(runs)
    return out


def run_seeds(
    build: Callable[[int], object],
    seeds: list[int],
    run: Callable[[object, int], dict[str, dict]],
) -> dict:
    """Build the scenario for each seed, run both policies on it, :func:`combine` the runs."""
    if not seeds:
        raise ValueError("seeds: at least one seed is needed")
    return combine({s: run(build(s), s) for s in seeds})


def fmt_value(v: float, fmt: str) -> str:
    """``v`` in the figure's format; an integer format ("{:d}") takes a count averaged over
    seeds (a float, also with one seed: :func:`combine` stores means) rounded."""
    try:
        return fmt.format(v)
    except ValueError:
        return fmt.format(int(round(v)))


def fmt_spread(st: dict[str, float], fmt: str) -> str:
    """``mean [min, max]`` in the figure's own format (one seed: the value alone)."""

    def f(v: float) -> str:
        return fmt_value(v, fmt)

    if st["n"] <= 1:
        return f(st["mean"])
    return f"{f(st['mean'])} [{f(st['min'])}, {f(st['max'])}]"
