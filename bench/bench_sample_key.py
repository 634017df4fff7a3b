"""Benchmark: the sample merge (COPY into staging, ``INSERT … ON CONFLICT DO NOTHING``) with the
old unique key (metric, entity, ts) against the per-source key (metric, entity, ts,
COALESCE(source, 0)) of issue 31 §4, on PostgreSQL, alternating in one run.

Each round writes a remote-write-sized batch (500 rows: 250 cards × 2 metrics) into a table
already holding ``--prefill`` rows, then the same batch again (all duplicates). Only the merge
statement is timed (the part the key changes); the staging COPY is identical for both.

Run: ``python bench/bench_sample_key.py [--rounds 200] [--prefill 200000]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import PG_ADMIN_URL, machine, write_result  # noqa: E402

KEYS = {
    "old (metric, entity, ts)": ("(metric_id, entity_id, ts)", "(metric_id, entity_id, ts)"),
    "new (metric, entity, ts, source)": (
        "(metric_id, entity_id, ts, (COALESCE(source_id, 0)))",
        "(metric_id, entity_id, ts, COALESCE(source_id, 0))",
    ),
}
MERGE = """
WITH staged AS (DELETE FROM staging RETURNING metric_id, entity_id, ts, value)
INSERT INTO {table} (metric_id, entity_id, ts, value, source_id)
SELECT metric_id, entity_id, to_timestamp(ts), value, 7 FROM staged
ORDER BY metric_id, entity_id, ts
ON CONFLICT {target} DO NOTHING
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--prefill", type=int, default=200_000)
    args = parser.parse_args()
    db = "bench_sample_key"
    with psycopg.connect(f"{PG_ADMIN_URL}/postgres", autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {db}")
        admin.execute(f"CREATE DATABASE {db}")
    timings: dict[str, dict[str, list[float]]] = {k: {"new": [], "dup": []} for k in KEYS}
    try:
        with psycopg.connect(f"{PG_ADMIN_URL}/{db}") as conn:
            tables = {}
            for i, (name, (index, _)) in enumerate(KEYS.items()):
                table = f"sample_{i}"
                tables[name] = table
                conn.execute(
                    f"CREATE TABLE {table} (id bigserial PRIMARY KEY, metric_id integer NOT NULL, "
                    "entity_id bigint NOT NULL, ts timestamptz NOT NULL, "
                    "value double precision NOT NULL, source_id integer)"
                )
                conn.execute(f"CREATE UNIQUE INDEX ON {table} {index}")
                conn.execute(
                    f"INSERT INTO {table} (metric_id, entity_id, ts, value, source_id) "
                    "SELECT g % 2 + 1, (g / 2) % 250 + 1, to_timestamp(1e9 + g / 500 * 15), 1.0, 7 "
                    f"FROM generate_series(0, {args.prefill - 1}) g"
                )
            conn.execute(
                "CREATE TEMP TABLE staging (metric_id integer, entity_id bigint, "
                "ts double precision, value double precision)"
            )
            conn.commit()
            base = 1e9 + args.prefill / 500 * 15
            for r in range(args.rounds):
                ts = base + 15 * (r + 1)
                data = "".join(f"{m}\t{e}\t{ts!r}\t0.5\n" for m in (1, 2) for e in range(1, 251))
                for name, (_, target) in KEYS.items():
                    for phase in ("new", "dup"):
                        with conn.cursor() as cur:
                            with cur.copy("COPY staging FROM STDIN") as copy:
                                copy.write(data)
                            start = time.perf_counter()
                            cur.execute(MERGE.format(table=tables[name], target=target))
                            timings[name][phase].append(time.perf_counter() - start)
                        conn.commit()
    finally:
        with psycopg.connect(f"{PG_ADMIN_URL}/postgres", autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {db}")
    out = {
        name: {phase: round(statistics.median(v) * 1000, 3) for phase, v in t.items()}
        for name, t in timings.items()
    }
    old, new = (out[k]["new"] for k in KEYS)
    result = {
        "machine": machine(),
        "rounds": args.rounds,
        "prefill_rows": args.prefill,
        "batch_rows": 500,
        "median_merge_ms": out,
        "ratio_new_over_old_insert": round(new / old, 3),
    }
    for name, figures in out.items():
        print(f"{name:36s} insert {figures['new']:7.3f} ms  all-duplicate {figures['dup']:7.3f} ms")
    print(f"ratio new/old (insert): {result['ratio_new_over_old_insert']}")
    write_result("sample_key", result)


if __name__ == "__main__":
    main()
