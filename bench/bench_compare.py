"""Benchmark: wall and CPU time of a 24 h ``compare`` of both policies at 10,240 cards.

Each run is a fresh child process doing what ``python -m simulation.engine compare --cards
10240 --hours 24 --seeds N`` does (build the default scenario per seed, run both policies of
every seed in the process pool, one worker per CPU), so the wall time includes start-up and
scenario building, as an operator waits for it. ``--repeats`` runs give the median.

``--baseline DIR`` also times an older engine in the same session, alternating with this
one (``DIR`` holds ``simulation/`` of that commit: ``git archive <commit> simulation/engine
simulation/__init__.py | tar -x -C DIR``), prints the ratio of the medians and whether both
engines give the same figures for the same seeds. On a shared machine the wall time depends
on the load: quote the ratio measured in one run. Writes ``bench/results/compare.json``.
Not a test.

Run from the repository root:
``python bench/bench_compare.py [--hours 24] [--seeds 1] [--repeats 3] [--baseline DIR]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, write_result  # noqa: E402

# Run in the child: the engine found on its cwd (this tree or the baseline's).
CHILD = """
import json, sys
sys.path.insert(0, ".")
from simulation.engine import compare as c
cards, hours, seed, n = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
seeds = range(seed, seed + n)
scens = {s: c.build_compare_scenario(cards, hours, s, None, None) for s in seeds}
if hasattr(c, "run_compare_seeds"):
    runs = c.run_compare_seeds(scens, hours)
else:  # older engines: one pair of processes per seed
    runs = {s: c.run_compare(scens[s], hours) for s in seeds}
json.dump({str(s): r for s, r in runs.items()}, sys.stdout, sort_keys=True, default=str)
"""


def _children_cpu_s() -> float:
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return kids.ru_utime + kids.ru_stime


def _time_once(cwd: Path, args) -> tuple[float, float, dict]:
    cpu, t = _children_cpu_s(), time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-c", CHILD, str(args.cards), str(args.hours), str(args.seed),
         str(args.seeds)],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )  # fmt: skip
    return time.perf_counter() - t, _children_cpu_s() - cpu, json.loads(r.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cards", type=int, default=10240)
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3, help="runs of this engine (median)")
    ap.add_argument("--baseline", type=Path, help="tree holding an older simulation/ to time")
    ap.add_argument("--baseline-repeats", type=int, default=1)
    args = ap.parse_args()
    load0 = os.getloadavg()
    order = ["current"] * args.repeats
    if args.baseline is not None:  # alternate, so both see the same minutes of load
        for i in range(args.baseline_repeats):
            order.insert(min(2 * i, len(order)), "baseline")
    walls: dict[str, list[float]] = {"current": [], "baseline": []}
    cpus: dict[str, list[float]] = {"current": [], "baseline": []}
    figures: dict[str, dict] = {}
    for which in order:
        cwd = ROOT if which == "current" else args.baseline.resolve()
        wall, cpu, runs = _time_once(cwd, args)
        walls[which].append(wall)
        cpus[which].append(cpu)
        figures.setdefault(which, runs)
        print(f"{which}: wall {wall:.1f} s, CPU {cpu:.1f} s (load {os.getloadavg()[0]:.1f})")
    load1 = os.getloadavg()
    med = {k: statistics.median(v) for k, v in walls.items() if v}
    line = (
        f"{args.seeds} seed(s), {args.cards} cards, {args.hours:g} h, both policies: median wall "
        f"{med['current']:.1f} s over {len(walls['current'])} run(s), CPU "
        f"{statistics.median(cpus['current']):.1f} s"
    )
    payload = {
        "cards": args.cards,
        "hours": args.hours,
        "seeds": args.seeds,
        "cpus": os.cpu_count(),
        "wall_s": med["current"],
        "wall_s_runs": walls["current"],
        "cpu_s_runs": cpus["current"],
        "load_average_before": load0[0],
        "load_average_after": load1[0],
        "target_wall_s": 60.0,
    }
    if "baseline" in med:
        same = figures["baseline"] == figures["current"]
        ratio = med["baseline"] / med["current"]
        line += (
            f"; baseline {med['baseline']:.1f} s: {ratio:.1f}x faster; "
            f"same figures as the baseline: {'yes' if same else 'NO'}"
        )
        payload.update(
            baseline_wall_s=med["baseline"],
            baseline_wall_s_runs=walls["baseline"],
            baseline_cpu_s_runs=cpus["baseline"],
            speedup=ratio,
            same_figures_as_baseline=same,
        )
    print(line + f"; load average {load0[0]:.1f} -> {load1[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"wrote {write_result('compare', payload)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
