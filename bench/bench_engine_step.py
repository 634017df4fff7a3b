"""Benchmark: wall time of one 60-simulated-second engine step at 1,024 / 10,240 / 102,400 cards.

Each size uses the default mix with at least 200 training jobs and 50 inference services
(more at 102,400 cards, where the mix scales with the cluster). The engine is warmed up for
two simulated hours so queues, caches and placements are in steady state, then single steps
are timed. Prints a table and writes ``bench/results/engine_step.json``. Not a test.

Run from the repository root: ``python bench/bench_engine_step.py [--repeats 25]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simulation.engine import Engine, default_scenario  # noqa: E402

SIZES = (1024, 10240, 102400)


def _meminfo_gib() -> float:
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return float("nan")


def bench_size(cards: int, repeats: int, warmup_s: float) -> dict:
    """Time ``repeats`` single steps after a warm-up; returns the figures for one size."""
    jobs = max(200, round(200 * cards / 10240))
    services = max(50, round(50 * cards / 10240))
    t0 = time.perf_counter()
    eng = Engine(default_scenario(cards, seed=7, n_training_jobs=jobs, n_services=services))
    build_s = time.perf_counter() - t0
    eng.run_until(warmup_s)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        eng.step()
        times.append(time.perf_counter() - t)
    t = time.perf_counter()
    blob = eng.save_state()
    save_s = time.perf_counter() - t
    t = time.perf_counter()
    Engine.load_state(blob)
    load_s = time.perf_counter() - t
    t = time.perf_counter()
    n_rows = sum(1 for _ in eng.snapshot().rows())
    rows_s = time.perf_counter() - t
    med = statistics.median(times)
    return {
        "cards": cards,
        "training_jobs": jobs,
        "inference_services": services,
        "repeats": repeats,
        "median_step_ms": med * 1e3,
        "mean_step_ms": statistics.fmean(times) * 1e3,
        "p90_step_ms": sorted(times)[int(0.9 * (len(times) - 1))] * 1e3,
        "speed_vs_real_time": eng.scenario.step_seconds / med,
        "build_s": build_s,
        "state_bytes": len(blob),
        "save_ms": save_s * 1e3,
        "load_ms": load_s * 1e3,
        "snapshot_rows": n_rows,
        "rows_ms": rows_s * 1e3,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=25)
    ap.add_argument("--warmup-hours", type=float, default=2.0)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "engine_step.json"))
    args = ap.parse_args()
    results = [bench_size(c, args.repeats, args.warmup_hours * 3600.0) for c in SIZES]
    by = {r["cards"]: r for r in results}
    ratio = by[102400]["median_step_ms"] / by[10240]["median_step_ms"]
    print(
        f"{'cards':>8} {'jobs':>5} {'svcs':>5} {'median ms':>10} {'mean ms':>9} "
        f"{'p90 ms':>8} {'x real':>8} {'state KB':>9} {'save ms':>8} {'load ms':>8}"
    )
    for r in results:
        print(
            f"{r['cards']:>8} {r['training_jobs']:>5} {r['inference_services']:>5} "
            f"{r['median_step_ms']:>10.1f} {r['mean_step_ms']:>9.1f} {r['p90_step_ms']:>8.1f} "
            f"{r['speed_vs_real_time']:>8.0f} {r['state_bytes'] / 1024:>9.0f} "
            f"{r['save_ms']:>8.1f} {r['load_ms']:>8.1f}"
        )
    print(f"median ratio 102,400 / 10,240 cards: {ratio:.2f} (linear would be 10.0)")
    out = {
        "benchmark": "engine_step",
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": {
            "cpus": os.cpu_count(),
            "mem_gib": round(_meminfo_gib(), 1),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "step_seconds": 60.0,
        "results": results,
        "ratio_102400_over_10240": ratio,
        "target_ms_at_10240": 50.0,
        "meets_target": by[10240]["median_step_ms"] <= 50.0 and ratio <= 10.0,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
