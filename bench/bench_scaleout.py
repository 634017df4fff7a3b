"""Benchmark: the same tick load on 1 vs 2 Celery worker processes (PostgreSQL + Redis).

One load, measured with one and then two solo-pool worker processes on a private queue:
four independent twin runs ticked together, round after round (throughput). (A single run's
tick is one task: its engine step is coupled, so it is not split across workers.)

Prints ticks per second and the speed-up 2 workers / 1 worker measured in the same run. On a
2-core machine PostgreSQL, Redis and the benchmark share those cores with the workers, so the
ideal 2× is out of reach; the figure says how much of it is left.

Run: ``python bench/bench_scaleout.py [--rounds 6]`` (needs PostgreSQL and Redis).
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
from _common import ROOT, django_setup, fresh_postgres, write_result  # noqa: E402

REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")


def start_workers(count: int, queue: str, url: str) -> list[subprocess.Popen]:
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "CELERY_BROKER_URL": REDIS_URL,
        "LOG_LEVEL": "WARNING",
    }
    return [
        subprocess.Popen(
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
                "-n",
                f"{queue}-{i}@bench",
                "--loglevel=WARNING",
            ],
            cwd=ROOT,
            env=env,
        )
        for i in range(count)
    ]


def stop(workers: list[subprocess.Popen]) -> None:
    for worker in workers:
        worker.terminate()
    for worker in workers:
        worker.wait(timeout=60)


def drive(runs, rounds: int, queue: str) -> float:
    """Tick every run ``rounds`` times (each round waits for all commits); returns seconds."""
    from cluster_portal.celery import app
    from simulation.models import TwinRun
    from simulation.tasks import advance_run

    started = None
    with app.connection_for_write(REDIS_URL) as conn:
        for round_index in range(rounds + 1):  # round 0 warms the workers up
            if round_index == 1:
                started = time.perf_counter()
            seqs = {run.pk: TwinRun.objects.get(pk=run.pk).tick_seq for run in runs}
            for run_id, seq in seqs.items():
                advance_run.apply_async((run_id, seq), queue=queue, connection=conn)
            deadline = time.monotonic() + 300
            while any(
                TwinRun.objects.get(pk=run_id).tick_seq <= seq for run_id, seq in seqs.items()
            ):
                if time.monotonic() > deadline:
                    raise RuntimeError("ticks did not commit within 300 s")
                time.sleep(0.01)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--run-cards", type=int, default=4096)
    args = parser.parse_args()
    os.environ["CELERY_BROKER_URL"] = REDIS_URL
    results = {}
    with fresh_postgres("scaleout") as url:
        django_setup(url)
        from inventory.models import Cluster
        from simulation.engine import default_scenario
        from simulation.services import twin_run_create

        independent = []
        for i in range(4):
            cluster = Cluster.objects.create(name=f"runs-{i}", kind=Cluster.Kind.UNIFIED)
            independent.append(
                twin_run_create(
                    name=f"runs-{i}",
                    cluster=cluster,
                    scenario=default_scenario(cards=args.run_cards, seed=i),
                )
            )
        for load, runs in (("runs", independent),):
            seconds = {}
            for count in (1, 2):
                queue = f"scale-{uuid.uuid4().hex[:6]}"
                workers = start_workers(count, queue, url)
                try:
                    seconds[count] = drive(runs, args.rounds, queue)
                finally:
                    stop(workers)
            ticks = args.rounds * len(runs)
            results[load] = {
                "runs": len(runs),
                "cards_per_run": args.run_cards,
                "ticks": ticks,
                "seconds_1_worker": seconds[1],
                "seconds_2_workers": seconds[2],
                "ticks_per_s_1_worker": ticks / seconds[1],
                "ticks_per_s_2_workers": ticks / seconds[2],
                "speedup": seconds[1] / seconds[2],
            }
            r = results[load]
            print(
                f"{load:<7} {r['runs']} run(s) × {r['cards_per_run']} cards: "
                f"1 worker {r['ticks_per_s_1_worker']:.2f} ticks/s, "
                f"2 workers {r['ticks_per_s_2_workers']:.2f} ticks/s, speed-up {r['speedup']:.2f}×"
            )
    print(f"wrote {write_result('scaleout', {'rounds': args.rounds, 'loads': results})}")


if __name__ == "__main__":
    main()
