"""Benchmark: dashboard data endpoints with 30 simulated days of history at 10,240 cards.

Builds a 10,240-card twin cluster (plus a 1,024-card legacy baseline), one real tick each,
then 30 days of synthetic history (``bench/_history.py``) on PostgreSQL. Measures, in
process (server time: Django handling the request, no network), the overview, hardware
heatmap and cost data endpoints for several ranges: p50/p95 over repeated requests and the
queries per request.

Run: ``python bench/bench_dashboards.py [--days 30] [--repeats 20]`` (needs PostgreSQL).
"""

from __future__ import annotations

import argparse
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import django_setup, fresh_postgres, reused, write_result  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def measure_concurrent(url: str, endpoints, users: int, seconds: float) -> dict:
    """``users`` concurrent clients against gunicorn, with and without the payload cache."""
    import os
    import socket
    import subprocess

    from _common import ROOT
    from _load import run_users

    from accounts.services.tokens import token_create

    token = token_create(name="bench-load", scopes=["read"]).plaintext
    out = {}
    # Cache on; cache on with every request asking a range no one asked before (the
    # issue's "unique ranges": only what does not depend on the range can be shared); and
    # cache off (every part of every request computed).
    for mode, cache_seconds, unique in (
        ("cache", 10, False),
        ("unique", 10, True),
        ("off", 0, False),
    ):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        env = {
            **os.environ,
            "DATABASE_URL": url,
            "DEBUG": "0",
            "ALLOWED_HOSTS": "127.0.0.1",
            "LOG_LEVEL": "WARNING",
            "DASHBOARD_CACHE_SECONDS": str(cache_seconds),
            # Closed-loop clients ask far faster than people refresh (every 15 s); the
            # per-token rate limit would answer most of them 429. Capacity is what's measured.
            "API_THROTTLE_READ": "1000000/min",
        }
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "cluster_portal.wsgi",
                "-w",
                "2",
                "-k",
                "gthread",
                "--threads",
                "4",
                "-b",
                f"127.0.0.1:{port}",
                "--timeout",
                "120",
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=env,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            for _ in range(100):
                try:
                    urllib.request.urlopen(base + "/healthz", timeout=2)
                    break
                except OSError:
                    time.sleep(0.3)
            latencies = run_users(
                base, endpoints, users=users, seconds=seconds, token=token, unique_ranges=unique
            )
        finally:
            server.terminate()
            server.wait(timeout=30)
        rows = []
        for label, values in latencies.items():
            if values:
                rows.append(
                    {
                        "endpoint": label,
                        "requests": len(values),
                        "p50_ms": percentile(values, 50),
                        "p95_ms": percentile(values, 95),
                    }
                )
                print(
                    f"  {users} users, {mode:<6}: {label:<22} "
                    f"p50 {rows[-1]['p50_ms']:7.1f} ms  p95 {rows[-1]['p95_ms']:7.1f} ms  "
                    f"({len(values)} requests)"
                )
        out[{"cache": "cache_10s", "off": "cache_0s", "unique": "unique_ranges"}[mode]] = rows
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--cards", type=int, default=10240)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--users", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the database afterwards and reuse it next time (for profiling)",
    )
    args = parser.parse_args()
    with fresh_postgres("dashboards", keep=args.keep) as url:
        django_setup(url)
        from _history import build_history
        from django.db import connection
        from django.test import Client
        from django.test.utils import CaptureQueriesContext, override_settings

        from accounts.models import User
        from inventory.models import Cluster
        from simulation.engine import default_scenario
        from simulation.services import twin_run_create, twin_tick

        started = time.perf_counter()
        clusters = {}
        history = (
            ()
            if reused(url)
            else (
                ("unified-bench", Cluster.Kind.UNIFIED, args.cards, "ascend-950dt", "unified"),
                ("legacy-bench", Cluster.Kind.LEGACY, 1024, "h100-sxm", "split"),
            )
        )
        for name, kind, cards, hardware, policy in history:
            cluster = Cluster.objects.create(name=name, kind=kind)
            run = twin_run_create(
                name=name,
                cluster=cluster,
                scenario=default_scenario(cards=cards, seed=7, hardware=hardware, policy=policy),
            )
            twin_tick(run_id=run.pk, expected_seq=0)
            counts = build_history(cluster, days=args.days)
            print(f"{name}: history written {counts}")
            clusters[name] = cluster
        if reused(url):
            # Latest values count only within 15 minutes: one fresh tick per twin, as when the
            # dataset was built, so a reused dataset measures the same reads.
            from simulation.models import TwinRun

            for run in TwinRun.objects.all():
                twin_tick(run_id=run.pk, expected_seq=run.tick_seq)
        if history:
            # What autovacuum does to a live database: visibility map and planner statistics
            # (a just-built dataset read 30-60% slower before it).
            with connection.cursor() as cursor:
                cursor.execute("VACUUM ANALYZE")
        build_s = time.perf_counter() - started
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_size_pretty(pg_database_size(current_database()))")
            db_size = cursor.fetchone()[0]
        print(f"history built in {build_s:.0f} s; database size {db_size}")

        operator, _ = User.objects.get_or_create(
            username="bench-operator", defaults={"is_staff": True}
        )
        from accounts.services.roles import ROLE_OPERATOR, roles_ensure

        operator.groups.add(roles_ensure()[ROLE_OPERATOR])
        client = Client()
        client.force_login(operator)
        endpoints = []
        for period in ("6h", "24h", "7d", "30d"):
            endpoints += [
                (
                    f"overview {period}",
                    f"/api/v1/dashboards/overview/?cluster=unified-bench&range={period}",
                ),
            ]
        for page in ("hardware", "memory", "network", "workloads"):
            for period in ("24h", "7d"):
                endpoints.append(
                    (
                        f"{page} {period}",
                        f"/api/v1/dashboards/{page}/?cluster=unified-bench&range={period}",
                    )
                )
        endpoints += [
            ("cost clusters 24h", "/api/v1/cost/clusters/?hours=24"),
            ("cost clusters 30d", f"/api/v1/cost/clusters/?hours={24 * args.days}"),
            ("cost comparison 24h", "/api/v1/cost/comparison/?hours=24"),
        ]
        results = []
        # As the web process does (cluster_portal.wsgi): freeze the start-up heap, and again
        # after the first request, so full GC passes do not walk it (cluster_portal.web.heap).
        from cluster_portal.web.heap import settle_after_first_request, settle_heap

        settle_heap()
        settle_after_first_request()
        with override_settings(DEBUG=False, DASHBOARD_CACHE_SECONDS=0):
            for label, path in endpoints:
                response = client.get(path)
                assert response.status_code == 200, (
                    path,
                    response.status_code,
                    response.content[:500],
                )
                times, queries = [], 0
                for _ in range(args.repeats):
                    with CaptureQueriesContext(connection) as captured:
                        t0 = time.perf_counter()
                        response = client.get(path)
                        times.append((time.perf_counter() - t0) * 1000)
                    queries = len(captured.captured_queries)
                row = {
                    "endpoint": label,
                    "path": path,
                    "p50_ms": percentile(times, 50),
                    "p95_ms": percentile(times, 95),
                    "queries": queries,
                    "bytes": len(response.content),
                }
                results.append(row)
                print(
                    f"{label:<22} p50 {row['p50_ms']:7.1f} ms  p95 {row['p95_ms']:7.1f} ms  "
                    f"{queries:3d} queries  {row['bytes'] / 1024:7.1f} KiB"
                )
        concurrent = measure_concurrent(url, endpoints, args.users, args.seconds)
    write = {
        "concurrent": concurrent,
        "days": args.days,
        "cards": args.cards,
        "repeats": args.repeats,
        "history_build_s": build_s,
        "database_size": db_size,
        "endpoints": results,
    }
    print(f"wrote {write_result('dashboards', write)}")


if __name__ == "__main__":
    main()
