"""In-process profile of the remote-write receiver (no Prometheus, no HTTP server).

Builds the bodies Prometheus' shards send for the ``bench_remote_write.py`` fleet (random
series of the 10,240 cards, ``--per-send`` samples each, one scrape's timestamp), registers
the cards with one warm-up pass, then posts ``--requests`` bodies through the view in this
process (auth, throttle, transaction, status row included) and reports stored samples/s and
µs per sample; ``--profile`` prints the cProfile top.

Run: ``python bench/profile_remote_write.py [--requests 60] [--per-send 500] [--profile]``.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _dcgm_fleet as fleet  # noqa: E402
from _common import django_setup, fresh_postgres, write_result  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=1280)
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--per-send", type=int, default=500)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--queries", action="store_true", help="print the SQL of one steady-state request"
    )
    parser.add_argument("--name", default="remote_write_inprocess")
    args = parser.parse_args()
    with fresh_postgres("remote_write_profile", keep=True) as db_url:
        django_setup(db_url)
        from django.db import connection
        from django.test import Client

        from accounts.services.tokens import token_create
        from inventory.models import Cluster
        from telemetry.receivers.twin import catalogue_sync
        from tests.telemetry.remote_write_helpers import write_request

        with connection.cursor() as cursor:
            cursor.execute("TRUNCATE monitoring_sample, monitoring_remotewritestatus")
        catalogue_sync()
        Cluster.objects.get_or_create(name="bench", defaults={"kind": Cluster.Kind.UNIFIED})
        token = token_create(name=f"profile-{time.time():.0f}", scopes=["ingest"]).plaintext
        client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
        url = "/api/v1/telemetry/remote-write/?cluster=bench"

        def bodies(ts_ms: int, count: int | None) -> list[bytes]:
            series = fleet.remote_write_series(range(args.hosts), ts_ms)
            random.Random(ts_ms).shuffle(series)
            chunks = [series[i : i + args.per_send] for i in range(0, len(series), args.per_send)]
            return [write_request(c) for c in chunks[:count]]

        def post(body: bytes) -> dict:
            response = client.post(
                url, body, content_type="application/x-protobuf", HTTP_CONTENT_ENCODING="snappy"
            )
            assert response.status_code == 200, response.content[:300]
            return response.json()

        now_ms = int(time.time() * 1000) - 60_000
        print("warm-up: one scrape of every card (registers them) …", flush=True)
        for body in bodies(now_ms - 15_000, None):
            post(body)
        measured = bodies(now_ms, args.requests)
        if args.queries:
            from django.test.utils import CaptureQueriesContext

            with CaptureQueriesContext(connection) as captured:
                post(measured.pop())
            print(f"one request: {len(captured.captured_queries)} statements")
            for query in captured.captured_queries:
                print(f"  {query['time']}s  {' '.join(query['sql'].split())[:150]}")
        profiler = cProfile.Profile() if args.profile else None
        inserted = 0
        t0, c0 = time.perf_counter(), time.process_time()
        if profiler:
            profiler.enable()
        for body in measured:
            inserted += post(body)["inserted"]
        if profiler:
            profiler.disable()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        rate = inserted / wall
        print(
            f"{len(measured)} requests × {args.per_send}: {inserted:,} stored in {wall:.2f} s "
            f"= {rate:,.0f} samples/s; {cpu / inserted * 1e6:.0f} µs CPU per sample in this "
            f"process; {wall / len(measured) * 1000:.0f} ms per request"
        )
        if profiler:
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(45)
            profiler.dump_stats("/tmp/h_rw.prof")
        write_result(
            args.name,
            {
                "per_send": args.per_send,
                "requests": len(measured),
                "inserted": inserted,
                "samples_per_second": round(rate),
                "cpu_us_per_sample": round(cpu / inserted * 1e6, 1),
                "ms_per_request": round(wall / len(measured) * 1000, 1),
            },
        )


if __name__ == "__main__":
    main()
