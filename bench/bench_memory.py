"""Benchmark: peak memory (RSS high-water mark) of the web process and the worker at 10,240 cards.

On PostgreSQL + Redis: a Celery worker (solo pool) commits ticks of a 10,240-card twin run;
then a gunicorn worker (one sync process) serves every dashboard data endpoint for that
cluster. Each process's ``VmHWM`` (peak resident set) is read from ``/proc`` at the end.

Run: ``python bench/bench_memory.py [--cards 10240] [--ticks 5]`` (needs PostgreSQL and Redis).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, django_setup, fresh_postgres, write_result  # noqa: E402

REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
ENDPOINTS = ("overview", "hardware", "memory", "network", "workloads")


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for pid {pid}")


def children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cards", type=int, default=10240)
    parser.add_argument("--ticks", type=int, default=5)
    args = parser.parse_args()
    os.environ["CELERY_BROKER_URL"] = REDIS_URL
    with fresh_postgres("memory") as url:
        django_setup(url)
        from accounts.services.tokens import token_create
        from cluster_portal.celery import app
        from inventory.models import Cluster
        from simulation.engine import default_scenario
        from simulation.models import TwinTick
        from simulation.services import twin_run_create
        from simulation.tasks import advance_run

        cluster = Cluster.objects.create(name="mem", kind=Cluster.Kind.UNIFIED)
        run = twin_run_create(
            name="mem", cluster=cluster, scenario=default_scenario(cards=args.cards, seed=7)
        )
        env = {
            **os.environ,
            "DATABASE_URL": url,
            "CELERY_BROKER_URL": REDIS_URL,
            "LOG_LEVEL": "WARNING",
            "DEBUG": "0",
            "ALLOWED_HOSTS": "127.0.0.1",
        }
        queue = f"mem-{uuid.uuid4().hex[:6]}"
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
        try:
            with app.connection_for_write(REDIS_URL) as conn:
                for seq in range(args.ticks):
                    advance_run.apply_async((run.pk, seq), queue=queue, connection=conn)
                    deadline = time.monotonic() + 120
                    while not TwinTick.objects.filter(run=run, seq=seq + 1).exists():
                        if time.monotonic() > deadline:
                            raise RuntimeError("tick did not commit")
                        time.sleep(0.05)
            worker_mib = peak_rss_mib(worker.pid)
        finally:
            worker.terminate()
            worker.wait(timeout=30)

        token = token_create(name="mem", scopes=["read"]).plaintext
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "cluster_portal.wsgi",
                "-w",
                "1",
                "-b",
                f"127.0.0.1:{port}",
                "--timeout",
                "120",
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env={**env, "DASHBOARD_CACHE_SECONDS": "0"},
        )
        try:
            base = f"http://127.0.0.1:{port}"
            for _ in range(100):
                try:
                    urllib.request.urlopen(base + "/healthz", timeout=2)
                    break
                except OSError:
                    time.sleep(0.3)
            for _ in range(3):
                for name in ENDPOINTS:
                    for period in ("6h", "24h"):
                        request = urllib.request.Request(
                            f"{base}/api/v1/dashboards/{name}/?cluster=mem&range={period}",
                            headers={"Authorization": f"Bearer {token}"},
                        )
                        with urllib.request.urlopen(request, timeout=120) as response:
                            response.read()
            web_mib = max(peak_rss_mib(pid) for pid in children(server.pid))
        finally:
            server.terminate()
            server.wait(timeout=30)
    result = {
        "cards": args.cards,
        "ticks": args.ticks,
        "worker_peak_rss_mib": worker_mib,
        "web_worker_peak_rss_mib": web_mib,
    }
    print(
        f"{args.cards} cards: worker peak RSS {worker_mib:.0f} MiB, "
        f"web worker peak RSS {web_mib:.0f} MiB (target ≤ 500 MB each)"
    )
    print(f"wrote {write_result('memory', result)}")


if __name__ == "__main__":
    main()
