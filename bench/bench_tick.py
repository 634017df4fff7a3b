"""Benchmark: one twin tick end to end at 10,240 cards, PostgreSQL + Redis, a real worker.

A Celery worker process (solo pool) consumes a private queue. Each measurement publishes
``simulation.advance_run`` and waits until the tick's TwinTick row is committed; the figure is
publish → commit as the portal sees it. The worker's own in-task time is reported beside it.

Run: ``python bench/bench_tick.py [--cards 10240] [--ticks 8]`` (needs PostgreSQL and Redis).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, django_setup, fresh_postgres, median, write_result  # noqa: E402

REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")


def wait_for(predicate, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.005)
    raise RuntimeError(f"timed out after {timeout}s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cards", type=int, default=10240)
    parser.add_argument("--ticks", type=int, default=8)
    args = parser.parse_args()
    os.environ["CELERY_BROKER_URL"] = REDIS_URL
    with fresh_postgres("tick") as url:
        django_setup(url)
        from cluster_portal.celery import app
        from inventory.models import Cluster
        from simulation.engine import default_scenario
        from simulation.models import TwinRun, TwinTick
        from simulation.services import twin_run_create
        from simulation.tasks import advance_run

        cluster = Cluster.objects.create(name="bench", kind=Cluster.Kind.UNIFIED)
        run = twin_run_create(
            name="bench", cluster=cluster, scenario=default_scenario(cards=args.cards, seed=7)
        )
        queue = f"bench-{uuid.uuid4().hex[:6]}"
        env = {
            **os.environ,
            "DATABASE_URL": url,
            "CELERY_BROKER_URL": REDIS_URL,
            "LOG_LEVEL": "WARNING",
        }
        worker = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "cluster_portal",
                "worker",
                "--pool=solo",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "-Q",
                queue,
                "--loglevel=WARNING",
            ],
            cwd=ROOT,
            env=env,
        )
        end_to_end, in_task, values = [], [], 0
        try:
            with app.connection_for_write(REDIS_URL) as conn:
                for seq in range(args.ticks + 1):  # the first tick registers layouts: warm-up
                    started = time.perf_counter()
                    advance_run.apply_async((run.pk, seq), queue=queue, connection=conn)
                    wait_for(
                        lambda s=seq: TwinTick.objects.filter(run=run, seq=s + 1).exists(), 120
                    )
                    elapsed = time.perf_counter() - started
                    tick = TwinTick.objects.get(run=run, seq=seq + 1)
                    if seq:
                        end_to_end.append(elapsed)
                        in_task.append(tick.duration_ms / 1000)
                        values = tick.samples
        finally:
            worker.terminate()
            worker.wait(timeout=30)
        assert TwinRun.objects.get(pk=run.pk).tick_seq == args.ticks + 1
    result = {
        "cards": args.cards,
        "ticks": args.ticks,
        "values_per_tick": values,
        "end_to_end_median_s": median(end_to_end),
        "end_to_end_max_s": max(end_to_end),
        "in_task_median_s": median(in_task),
        "broker": "redis",
        "database": "postgresql",
    }
    print(f"cards {args.cards}: {values:,} values per tick")
    print(
        f"end to end (publish → committed): median {median(end_to_end):.3f} s, "
        f"max {max(end_to_end):.3f} s (target ≤ 0.3 s)"
    )
    print(f"inside the task: median {median(in_task):.3f} s")
    print(f"wrote {write_result('tick', result)}")


if __name__ == "__main__":
    main()
