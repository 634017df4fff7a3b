"""Benchmark: what the stored-samples counter costs the store's hottest write.

``samples_write`` now adds the rows it stored to a running total (``StoreCounter``, one upsert
in the write's own transaction, inside a savepoint). This times a 10,000-row batch (1,000
cards × 5 metrics × 2 timestamps) written through ``telemetry.store.samples.samples_write`` in
its own transaction, alternating with and without the counter (``counter_add`` replaced by a
no-op), on the same PostgreSQL database, and prints the medians and their ratio. The
savepoint is taken in both arms, so the ratio is the upsert's cost; the savepoint's two round
trips are not in it.

Run: ``python bench/bench_store_counter.py [--rounds 15]`` (needs PostgreSQL on 127.0.0.1).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import django_setup, fresh_postgres, median, write_result  # noqa: E402

CARDS = 1000
METRICS = (
    "accelerator_utilization_ratio",
    "accelerator_hbm_used_bytes",
    "accelerator_temperature_celsius",
    "accelerator_power_watts",
    "accelerator_health_status",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    with fresh_postgres("store_counter") as url:
        django_setup(url)
        from django.db import transaction

        import telemetry.store.samples as store
        from inventory.models import Cluster
        from telemetry.models import Entity, EntityKind, MetricDefinition

        cluster = Cluster.objects.create(name="bench", kind=Cluster.Kind.UNIFIED)
        entities = [
            Entity.objects.create(cluster=cluster, kind=EntityKind.ACCELERATOR, key=f"n/{i}").pk
            for i in range(CARDS)
        ]
        metrics = [MetricDefinition.objects.get(name=name).pk for name in METRICS]
        counted = store.counter_add
        timings: dict[str, list[float]] = {"with counter": [], "without counter": []}
        t0 = 1_790_000_000.0
        for round_ in range(args.rounds * 2):
            label = "with counter" if round_ % 2 == 0 else "without counter"
            store.counter_add = counted if label == "with counter" else (lambda *_a: None)
            ts = t0 + 2 * round_
            rows = [(m, e, ts + k, 0.5) for m in metrics for e in entities for k in (0, 1)]
            start = time.perf_counter()
            with transaction.atomic():
                stored = store.samples_write(rows)
            timings[label].append(time.perf_counter() - start)
            assert stored.inserted == len(rows)
        store.counter_add = counted
        with_, without = median(timings["with counter"]), median(timings["without counter"])
        result = {
            "rows_per_batch": len(metrics) * CARDS * 2,
            "rounds": args.rounds,
            "median_with_counter_s": with_,
            "median_without_counter_s": without,
            "ratio": with_ / without,
        }
        print(
            f"10,000-row batch: {with_ * 1000:.1f} ms with the counter, "
            f"{without * 1000:.1f} ms without (median of {args.rounds} each, alternating): "
            f"x{with_ / without:.3f}"
        )
        write_result("store_counter", result)


if __name__ == "__main__":
    main()
