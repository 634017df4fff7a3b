"""Benchmark: median wall time of one engine step at 10,240 cards with the serving model.

Warms the default mix up for one simulated hour, then times ``--repeats`` single steps.
Run from the repository root: ``python bench/bench_serving_step.py [--repeats 20]``. Not a test.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simulation.engine import Engine, default_scenario  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cards", type=int, default=10240)
    ap.add_argument("--repeats", type=int, default=20)
    a = ap.parse_args()
    t0 = time.perf_counter()
    eng = Engine(default_scenario(a.cards, seed=7))
    build = time.perf_counter() - t0
    eng.run_until(3600.0)
    times = []
    for _ in range(a.repeats):
        t = time.perf_counter()
        eng.step()
        times.append(time.perf_counter() - t)
    print(
        f"{a.cards} cards: engine build {build * 1e3:.0f} ms, step median "
        f"{statistics.median(times) * 1e3:.1f} ms, max {max(times) * 1e3:.1f} ms "
        f"({a.repeats} steps)"
    )


if __name__ == "__main__":
    main()
