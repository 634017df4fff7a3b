"""Benchmark: ``/api/v1/accelerators/?page_size=N`` on an exporter-fed cluster of 10,240 cards.

Registers 10,240 cards (1,280 nodes × 8) the way ingestion does (``devices_register``), then
writes ``--scrapes`` scrapes 15 s apart of 22 accelerator metrics per card (the 7 mapped
DCGM fields plus 15 exporter-only ones, as dcgm-exporter's default field list gives) ending
now, COPYed through the store's writer. Measures, in process (server time: Django handling
the request, no network), the list at several page sizes: median and p95 over ``--repeats``
requests, and the queries per request.

``--before`` also measures the previous ``latest_values`` (revision 91bea4d: group the last
hour by (entity, metric), then one OR term per pair), once per page size, skipping sizes
above ``--before-max`` (1,000 took longer than gunicorn's 30 s worker timeout).

Run: ``python bench/bench_accelerator_list.py [--cards 10240] [--scrapes 20] [--before]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import django_setup, fresh_postgres, median, reused, write_result  # noqa: E402

MAPPED = (
    "accelerator_utilization_ratio",
    "accelerator_hbm_used_bytes",
    "accelerator_hbm_total_bytes",
    "accelerator_temperature_celsius",
    "accelerator_power_watts",
    "accelerator_sm_clock_hertz",
    "accelerator_energy_joules_total",
)
UNMAPPED = tuple(
    f"DCGM_FI_{name}"
    for name in (
        "DEV_MEM_CLOCK",
        "DEV_MEMORY_TEMP",
        "DEV_PCIE_REPLAY_COUNTER",
        "DEV_MEM_COPY_UTIL",
        "DEV_ENC_UTIL",
        "DEV_DEC_UTIL",
        "DEV_FB_FREE",
        "DEV_NVLINK_BANDWIDTH_TOTAL",
        "DEV_VGPU_LICENSE_STATUS",
        "PROF_GR_ENGINE_ACTIVE",
        "PROF_PIPE_TENSOR_ACTIVE",
        "PROF_DRAM_ACTIVE",
        "PROF_PCIE_TX_BYTES",
        "PROF_PCIE_RX_BYTES",
        "DEV_CLOCK_THROTTLE_REASONS",
    )
)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def build(cards: int, scrapes: int) -> None:
    import io

    from django.db import connection, transaction

    from inventory.models import Cluster
    from telemetry.catalogue.registry import DeviceRef, devices_register, metrics_register_unmapped
    from telemetry.models import MetricDefinition

    cluster = Cluster.objects.create(name="exporters", kind=Cluster.Kind.LEGACY)
    devices = [
        DeviceRef(
            host=f"gpu-{i // 8:04d}", index=i % 8, vendor_id=f"GPU-{i:08x}", model_name="H100"
        )
        for i in range(cards)
    ]
    entity_ids = list(devices_register(cluster, devices).values())
    metrics_register_unmapped({name: ("accelerator", "dcgm-exporter") for name in UNMAPPED})
    for name in MAPPED:  # catalogue rows ingestion creates when an exporter first sends them
        MetricDefinition.objects.get_or_create(name=name, defaults={"entity_kind": "accelerator"})
    metric_ids = list(
        MetricDefinition.objects.filter(name__in=MAPPED + UNMAPPED).values_list("pk", flat=True)
    )
    now = time.time()
    started = time.perf_counter()
    # Raw COPY (what the store's writer ends in), scrape by scrape so memory stays small.
    with transaction.atomic(), connection.cursor() as cursor:
        for scrape in range(scrapes):
            ts = time.strftime(
                "%Y-%m-%d %H:%M:%S+00", time.gmtime(now - 15 * (scrapes - 1 - scrape))
            )
            buffer = io.StringIO()
            for metric_id in metric_ids:
                for n, entity_id in enumerate(entity_ids):
                    buffer.write(f"{metric_id}\t{entity_id}\t{ts}\t{(n * 7 + scrape) % 100}\n")
            buffer.seek(0)
            with cursor.cursor.copy(
                "COPY monitoring_sample (metric_id, entity_id, ts, value) FROM STDIN"
            ) as copy:
                copy.write(buffer.read())
        cursor.execute("ANALYZE monitoring_sample")
    rows = len(metric_ids) * len(entity_ids) * scrapes
    print(f"{rows:,} samples written in {time.perf_counter() - started:.0f} s")


def old_latest_values(entities, *, since):
    """``latest_values`` as of revision 91bea4d, for the "before" figures."""
    from collections import defaultdict
    from datetime import UTC, datetime

    from django.db.models import Max, Q

    from telemetry.models import Sample
    from telemetry.read.local.frames import latest_frame_values

    entity_ids = [e.pk for e in entities]
    if not entity_ids:
        return {}
    cutoff = datetime.now(tz=UTC) - since
    newest = (
        Sample.objects.filter(entity_id__in=entity_ids, ts__gte=cutoff)
        .values("entity_id", "metric_id")
        .annotate(last=Max("ts"))
    )
    result = defaultdict(dict)
    if newest:
        condition = Q()
        for row in newest:
            condition |= Q(entity_id=row["entity_id"], metric_id=row["metric_id"], ts=row["last"])
        for entity_id, name, value in Sample.objects.filter(condition).values_list(
            "entity_id", "metric__name", "value"
        ):
            result[entity_id][name] = value
    for entity_id, values in latest_frame_values(entity_ids, since=cutoff).items():
        result[entity_id].update(values)
    return dict(result)


def measure(client, sizes, repeats: int, cards: int) -> list[dict]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    out = []
    for size in sizes:
        times, queries, values = [], 0, 0
        for repeat in range(repeats):
            page = 1 + repeat % -(-cards // size)  # a different page each time
            url = f"/api/v1/accelerators/?cluster=exporters&page_size={size}&page={page}"
            with CaptureQueriesContext(connection) as captured:
                started = time.perf_counter()
                response = client.get(url)
                times.append(time.perf_counter() - started)
            assert response.status_code == 200, response.content[:300]
            body = response.json()
            queries = len(captured.captured_queries)
            values = sum(len(card["latest"]) for card in body["results"])
        row = {
            "page_size": size,
            "median_s": round(median(times), 3),
            "p95_s": round(percentile(times, 95), 3),
            "requests": len(times),
            "queries": queries,
            "values_per_page": values,
        }
        print(row)
        out.append(row)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cards", type=int, default=10240)
    parser.add_argument("--scrapes", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--before", action="store_true")
    # Larger "before" pages are not measured: the old 16,000-term statement at 1,000 cards
    # sat in the planner, deaf to cancel requests, blocking every DROP DATABASE on the server.
    parser.add_argument("--before-max", type=int, default=200)
    parser.add_argument("--keep", action="store_true", help="keep and reuse the database")
    args = parser.parse_args()
    with fresh_postgres("acclist", keep=args.keep) as url:
        django_setup(url)
        from django.test import Client

        from accounts.models import User
        from accounts.services.roles import ROLE_OPERATOR, roles_ensure
        from telemetry.read.local import latest

        if not reused(url):
            build(args.cards, args.scrapes)
        operator, _ = User.objects.get_or_create(
            username="bench-operator", defaults={"is_staff": True}
        )
        operator.groups.add(roles_ensure()[ROLE_OPERATOR])
        client = Client()
        client.force_login(operator)
        sizes = (50, 100, 200, 1000)
        client.get("/api/v1/accelerators/?cluster=exporters&page_size=10")  # warm-up
        after = measure(client, sizes, args.repeats, args.cards)
        before = []
        if args.before:
            current = latest.latest_values
            latest.latest_values = old_latest_values
            try:
                before = measure(client, [s for s in sizes if s <= args.before_max], 1, args.cards)
            finally:
                latest.latest_values = current
        path = write_result(
            "accelerator_list",
            {
                "cards": args.cards,
                "metrics_per_card": len(MAPPED) + len(UNMAPPED),
                "scrapes": args.scrapes,
                "after": after,
                "before": before,
            },
        )
        print(f"written {path}")


if __name__ == "__main__":
    main()
