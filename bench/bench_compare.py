"""Benchmark: wall and CPU time of a 24 h ``compare`` of both policies at 10,240 cards.

Runs what ``python -m simulation.engine compare --cards 10240 --hours 24 --seed 7`` runs per
seed (the default scenario, both policies in two processes when two CPUs are available),
for ``--seeds`` seeds, and reports the wall time, the CPU time of this process and its
workers, and the load average around the run. On a shared machine the wall time depends on
the load; the CPU time per policy run is what a quiet 2-core machine's wall time approaches
(the two policies run in parallel). Writes ``bench/results/compare.json``. Not a test.

Run from the repository root: ``python bench/bench_compare.py [--hours 24] [--seeds 1]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, write_result  # noqa: E402

sys.path.insert(0, str(ROOT))
from simulation.engine.compare import build_compare_scenario, run_compare  # noqa: E402


def _cpu_s() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cards", type=int, default=10240)
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--seeds", type=int, default=1)
    args = ap.parse_args()
    load0 = os.getloadavg()
    cpu0, t0 = _cpu_s(), time.perf_counter()
    runs = []
    for seed in range(args.seed, args.seed + args.seeds):
        c, t = _cpu_s(), time.perf_counter()
        scen = build_compare_scenario(args.cards, args.hours, seed, None, None)
        out = run_compare(scen, args.hours)
        runs.append(
            {
                "seed": seed,
                "wall_s": time.perf_counter() - t,
                "cpu_s": _cpu_s() - c,
                "ttft_p99_ms": {p: out[p].get("ttft_p99_ms") for p in out},
            }
        )
        print(f"seed {seed}: wall {runs[-1]['wall_s']:.1f} s, CPU {runs[-1]['cpu_s']:.1f} s")
    wall, cpu = time.perf_counter() - t0, _cpu_s() - cpu0
    load1 = os.getloadavg()
    print(
        f"{args.seeds} seed(s), {args.cards} cards, {args.hours:g} h: wall {wall:.1f} s, "
        f"CPU {cpu:.1f} s (both policies; ~{cpu / 2 / args.seeds:.1f} s per policy run), "
        f"load average {load0[0]:.1f} -> {load1[0]:.1f} on {os.cpu_count()} CPUs"
    )
    payload = {
        "cards": args.cards,
        "hours": args.hours,
        "seeds": args.seeds,
        "wall_s": wall,
        "cpu_s": cpu,
        "cpu_s_per_policy_run": cpu / 2 / args.seeds,
        "load_average_before": load0[0],
        "load_average_after": load1[0],
        "runs": runs,
        "target_wall_s": 60.0,
    }
    path = write_result("compare", payload)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
