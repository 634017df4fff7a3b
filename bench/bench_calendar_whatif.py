"""Benchmark: how long a calendar revision's before-you-sign what-if takes on a worker.

``simulation.engine.calendar_replay`` runs the twin twice per seed (the calendar in force and
the proposed one) over the replayed history. This times it for a 64-card cluster (the twin's
minimum) with 24 h of history (a job every 30 minutes, two cards, four hours each) and prints
the seconds per run (one seed, one calendar, 24 simulated hours) as the median of the rounds,
and the default request's total (3 days x 3 seeds x 2 calendars) extrapolated from it.

Run: ``python bench/bench_calendar_whatif.py [--rounds 3]`` (pure engine: no database).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import median, write_result  # noqa: E402

from simulation.engine.calendar_replay import calendar_replay  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    demand = [{"cards": 2, "submit": i * 1800.0, "duration": 4 * 3600.0} for i in range(46)]
    per_run = []
    for seed in range(7, 7 + args.rounds):
        started = time.perf_counter()
        calendar_replay(
            cards=64,
            demand=demand,
            inference_fraction=0.5,
            hours=24.0,
            start_hour=0.0,
            current_night=None,
            proposed_night=(20.0, 8.0),
            seeds=(seed,),
        )
        per_run.append((time.perf_counter() - started) / 2)
    run_s = median(per_run)
    print(
        f"one run (1 seed, 1 calendar, 24 h, 64 cards): median {run_s:.1f} s "
        f"of {args.rounds} ({', '.join(f'{s:.1f}' for s in per_run)})"
    )
    print(f"default what-if (3 days x 3 seeds x 2 calendars): ~{run_s * 18:.0f} s on one core")
    write_result("calendar_whatif", {"run_seconds_median": run_s, "runs": per_run})


if __name__ == "__main__":
    main()
