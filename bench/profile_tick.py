"""Profile: where a twin tick's time goes, in-process, at 10,240 cards on PostgreSQL.

Runs ``twin_tick`` back to back in this process (no broker, no worker) on a fresh database
and reports the median wall time per phase (timers wrapped around the tick's own functions)
over ``--ticks`` ticks after one warm-up tick (which registers layouts and entities).
``--profile`` also prints the top of a cProfile over the measured ticks. Not a test; the
figure that matters for the issue is ``bench_tick.py`` (a real worker, publish → commit).

Run: ``python bench/profile_tick.py [--cards 10240] [--ticks 8] [--profile]`` (needs
PostgreSQL; set ``BENCH_DB_SUFFIX`` to keep off other engineers' databases).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import django_setup, fresh_postgres, median  # noqa: E402

# (module, function) pairs timed inclusively; nested ones are reported beside their parent.
PHASES = (
    ("simulation.services.ticks", "engine_steps"),
    ("simulation.services.tickdata", "serving_rows"),
    ("simulation.services.tickdata", "samples_write"),
    ("simulation.services.tickdata", "frames_write_many"),
    ("simulation.services.tickdata", "layout_for_keys"),
    ("telemetry.store.frames", "_coarse_until"),
    ("telemetry.store.frames", "frames_insert"),
    ("telemetry.store.frames", "rollups_merge"),
    ("telemetry.store.frames", "_rollups_update"),
    ("simulation.services.ticks", "step_data_write"),
    ("simulation.services.ticks", "tick_finish"),
    ("simulation.services.ticks", "checkpoint_if_due"),
    ("simulation.services.ticks", "heartbeat_record"),
    ("simulation.services.ticks", "gap_record"),
    ("simulation.services.ticks", "traffic_shares_for_cluster"),
)


def _wrap(times: dict[str, float]) -> None:
    import importlib

    for module_name, name in PHASES:
        module = importlib.import_module(module_name)
        original = getattr(module, name)

        def timed(*args, __f=original, __n=name, **kwargs):
            started = time.perf_counter()
            try:
                return __f(*args, **kwargs)
            finally:
                times[__n] += time.perf_counter() - started

        setattr(module, name, timed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cards", type=int, default=10240)
    parser.add_argument("--ticks", type=int, default=8)
    parser.add_argument("--profile", action="store_true", help="print a cProfile summary")
    args = parser.parse_args()
    with fresh_postgres("profile_tick") as url:
        django_setup(url)
        from inventory.models import Cluster
        from simulation.engine import default_scenario
        from simulation.services import twin_run_create
        from simulation.services.ticks import twin_tick

        cluster = Cluster.objects.create(name="bench", kind=Cluster.Kind.UNIFIED)
        run = twin_run_create(
            name="bench", cluster=cluster, scenario=default_scenario(cards=args.cards, seed=7)
        )
        times: dict[str, float] = defaultdict(float)
        _wrap(times)
        # Ticks 10 s apart in stamped time, as at the real cadence (one minute every 6 ticks).
        start = time.time() - 10 * (args.ticks + 1)
        outcome = twin_tick(run_id=run.pk, expected_seq=0, tick_time=start)  # warm-up
        per_tick: list[dict[str, float]] = []
        totals: list[float] = []
        profiler = cProfile.Profile() if args.profile else None
        samples = 0
        for seq in range(1, args.ticks + 1):
            times.clear()
            if profiler:
                profiler.enable()
            started = time.perf_counter()
            outcome = twin_tick(run_id=run.pk, expected_seq=seq, tick_time=start + 10 * seq)
            totals.append(time.perf_counter() - started)
            if profiler:
                profiler.disable()
            assert outcome.committed, outcome
            samples = outcome.samples
            per_tick.append(dict(times))
    print(f"cards {args.cards}: {samples:,} values per tick, {args.ticks} ticks")
    print(f"tick (in process): median {median(totals) * 1e3:.1f} ms, max {max(totals) * 1e3:.1f}")
    for _, name in PHASES:
        values = [t.get(name, 0.0) for t in per_tick]
        print(f"  {name:28s} median {median(values) * 1e3:7.1f} ms")
    if profiler:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(45)
        print(out.getvalue())


if __name__ == "__main__":
    main()
