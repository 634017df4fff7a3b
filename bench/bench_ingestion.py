"""Benchmark: HTTP ingestion on PostgreSQL under gunicorn vs raw psycopg COPY of the same rows.

Batches of 10,000 samples (1,000 accelerators × 5 metrics × 2 timestamps) are POSTed as JSON
to ``/api/v1/telemetry/samples/`` on gunicorn (2 workers), which authenticates, validates
every row, resolves names, COPYs into a staging table and inserts with duplicate detection
(rollups are built later by compaction, off the ingestion path). The baseline COPYs the same
number of rows straight into the sample table with psycopg (no validation, no dedupe).
Both are measured in the same run on the same database; the ratio is HTTP / COPY.

Run: ``python bench/bench_ingestion.py [--batches 10]`` (needs PostgreSQL on 127.0.0.1).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, django_setup, fresh_postgres, median, write_result  # noqa: E402

ENTITIES = 1000
METRICS = (
    "accelerator_utilization_ratio",
    "accelerator_hbm_used_bytes",
    "accelerator_temperature_celsius",
    "accelerator_power_watts",
    "accelerator_health_status",
)
BATCH = ENTITIES * len(METRICS) * 2


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_http(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"{url} did not answer within {timeout}s")


def batch_json(index: int, base: float) -> bytes:
    samples = [
        {
            "metric": metric,
            "cluster": "bench",
            "entity_kind": "accelerator",
            "entity": f"node{e // 8}/{e % 8}",
            "ts": base + index * 10 + step,
            "value": float((e * 7 + step) % 100) / 100,
        }
        for step in range(2)
        for metric in METRICS
        for e in range(ENTITIES)
    ]
    return json.dumps({"samples": samples}).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=10)
    args = parser.parse_args()
    with fresh_postgres("ingestion") as url:
        django_setup(url)
        import psycopg

        from accounts.services.tokens import token_create
        from inventory.models import Cluster
        from telemetry.models import MetricDefinition

        Cluster.objects.create(name="bench", kind=Cluster.Kind.UNIFIED)
        token = token_create(name="bench", scopes=["ingest"]).plaintext
        port = free_port()
        env = {
            **os.environ,
            "DATABASE_URL": url,
            "DEBUG": "0",
            "ALLOWED_HOSTS": "127.0.0.1",
            "LOG_LEVEL": "WARNING",
        }
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "cluster_portal.wsgi",
                "-w",
                "2",
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
            wait_http(f"http://127.0.0.1:{port}/healthz")
            base = datetime.now(tz=UTC).timestamp() - 2 * 86400
            http_times = []
            for index in range(args.batches + 1):  # the first batch registers entities: warm-up
                body = batch_json(index, base)
                request = urllib.request.Request(
                    f"http://127.0.0.1:{port}/api/v1/telemetry/samples/",
                    data=body,
                    headers={
                        "Authorization": f"Bearer {token}",
                        "Content-Type": "application/json",
                    },
                )
                started = time.perf_counter()
                with urllib.request.urlopen(request, timeout=120) as response:
                    answer = json.loads(response.read())
                elapsed = time.perf_counter() - started
                assert answer["inserted"] == BATCH, answer
                if index:
                    http_times.append(elapsed)
        finally:
            server.terminate()
            server.wait(timeout=30)

        metric_ids = list(
            MetricDefinition.objects.filter(name__in=METRICS).values_list("id", flat=True)
        )
        from telemetry.models import Entity

        entity_ids = list(Entity.objects.filter(cluster__name="bench").values_list("id", flat=True))
        copy_times = []
        copy_base = base + 10**6
        with psycopg.connect(url) as conn:
            for index in range(args.batches):
                rows = [
                    (m, e, datetime.fromtimestamp(copy_base + index * 10 + step, tz=UTC), 0.5)
                    for step in range(2)
                    for m in metric_ids
                    for e in entity_ids
                ]
                started = time.perf_counter()
                with (
                    conn.cursor() as cur,
                    cur.copy(
                        "COPY monitoring_sample (metric_id, entity_id, ts, value) FROM STDIN"
                    ) as copy,
                ):
                    for row in rows:
                        copy.write_row(row)
                conn.commit()
                copy_times.append(time.perf_counter() - started)

    http_rate = BATCH / median(http_times)
    copy_rate = BATCH / median(copy_times)
    result = {
        "batch_samples": BATCH,
        "batches": args.batches,
        "http_median_s": median(http_times),
        "copy_median_s": median(copy_times),
        "http_samples_per_s": http_rate,
        "copy_samples_per_s": copy_rate,
        "ratio_http_to_copy": http_rate / copy_rate,
        "server": "gunicorn, 2 sync workers",
    }
    print(f"{'path':<34}{'median s/batch':>16}{'samples/s':>14}")
    print(f"{'HTTP JSON (validate + insert)':<34}{median(http_times):>16.3f}{http_rate:>14,.0f}")
    print(f"{'raw psycopg COPY':<34}{median(copy_times):>16.3f}{copy_rate:>14,.0f}")
    print(f"ratio HTTP / COPY: {http_rate / copy_rate:.2f} (target ≥ 0.4)")
    print(f"wrote {write_result('ingestion', result)}")


if __name__ == "__main__":
    main()
