"""Benchmark: the SQLite demo's storage over one simulated hour, and its tick time.

Seeds the demo the way ``make demo`` does (``migrate``, ``seed_demo``, ``seed_twin``,
``seed_migrations``; ``PORTAL_DEMO=1``) into a temporary SQLite file, then runs the demo's
periodic work in *simulated* wall-clock time, as fast as this machine allows: every 10 s of
simulated time a scheduler tick of each running twin run (the service ``advance_run``
calls), every 5 s a memory-pool tick, every 30 s compaction (``compact_rollups``: sample
rollups and frame minutes), every 60 s the cost ledger's hour close, every 600 s retention
(``telemetry_retention``), each at its beat cadence (``cluster_portal.schedule``). The
clock (``time.time``, ``timezone.now``) is the simulated one, so data is stamped, rolled up
and pruned as it would be in an hour of the demo.

Prints the database's bytes (file + ``-wal``) and SQLite's page and free-page counts after
each simulated 10 minutes, the largest tables, each class's size after a day projected from
its growth after minute 10 and its retention (``project_day``), and the tick time median /
p95 against the 10 s tick interval (wall time, and the process's CPU time, which a loaded
machine does not inflate). Ctrl-C stops it early and reports over the snapshots so far.
The benchmark is one process: it closes its connection
before each snapshot, which checkpoints the WAL, so it cannot show a WAL held by readers.

Run: ``python bench/bench_demo_storage.py [--minutes 60] [--cards 4096]`` (no PostgreSQL
or Redis needed; the broker is in memory and nothing is dispatched to it).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, median, write_result  # noqa: E402

TICK, POOL, COMPACT, LEDGER, RETENTION = 10, 5, 30, 60, 600


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def file_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())


def pages(path: Path) -> tuple:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        names = ("page_count", "freelist_count", "page_size")
        return tuple(db.execute(f"PRAGMA {p}").fetchone()[0] for p in names)
    finally:
        db.close()


def largest_tables(path: Path, top: int = 8) -> list[tuple[str, int]]:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = db.execute(
            "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC LIMIT ?", [top]
        ).fetchall()
    finally:
        db.close()
    return [(name, int(size)) for name, size in rows]


def classes(path: Path) -> dict[str, int]:
    """Rows of samples and rollups, bytes of frames per resolution: what grows, and how."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        out = {"sample_rows": db.execute("SELECT count(*) FROM monitoring_sample").fetchone()[0]}
        for resolution, rows in db.execute(
            "SELECT resolution, count(*) FROM monitoring_rollup GROUP BY 1"
        ):
            out[f"rollup_{resolution}_rows"] = rows
        for resolution, size in db.execute(
            'SELECT resolution, sum(coalesce(length("values"), 0) + coalesce(length(count), 0)'
            " + coalesce(length(sum), 0) + coalesce(length(min), 0) + coalesce(length(max), 0))"
            " FROM monitoring_frame GROUP BY 1"
        ):
            out[f"frame_{resolution}_bytes"] = int(size or 0)
        return out
    finally:
        db.close()


def project_day(snapshots: list[dict], tables: list[tuple[str, int]]) -> dict:
    """Each class's size after a day: its growth per minute (from minute 10, after the first
    retention run dropped the seed's back-dated history, to the end) times the minutes it is
    kept (retention, at most a day); rows are sized by their table and indexes as stored.
    The file's measured overhead over its tables (free pages) is applied to the total."""
    from telemetry.store.retention import RetentionPolicy

    policy = RetentionPolicy.from_settings()
    size = dict(tables)
    first = next((s for s in snapshots if s["sim_minutes"] >= 10), snapshots[0])
    last = snapshots[-1]
    minutes = max(1, last["sim_minutes"] - first["sim_minutes"])
    day = 24 * 60

    def kept(delta) -> float:
        return min(day, delta.total_seconds() / 60)

    def rate(key: str) -> float:
        return max(0, last.get(key, 0) - first.get(key, 0)) / minutes

    sample_row = (
        size.get("monitoring_sample", 0)
        + size.get("sample_unique_point_source", 0)
        + size.get("monitoring_sample_entity_id_e0269de6", 0)
    ) / max(1, last["sample_rows"])
    rollup_rows = sum(v for k, v in last.items() if k.startswith("rollup_"))
    rollup_row = (
        size.get("monitoring_rollup", 0) + size.get("sqlite_autoindex_monitoring_rollup_1", 0)
    ) / max(1, rollup_rows)
    frame_payload = sum(v for k, v in last.items() if k.startswith("frame_"))
    frame_overhead = (
        size.get("monitoring_frame", 0) + size.get("sqlite_autoindex_monitoring_frame_1", 0)
    ) / max(1, frame_payload)
    raw_samples = kept(max(policy.raw_other, policy.serving_counters_kept_for))
    classes = {"raw samples": rate("sample_rows") * raw_samples * sample_row}
    # Coarser tiers hold the same series (rows) or the same arrays (frames) per bucket as the
    # minute tier, one bucket per ``resolution``: their bytes are a minute's times the buckets
    # kept (an hour's run sees too few coarse buckets to measure their own growth).
    for resolution, keep in policy.rollup.items():
        buckets = max(1.0, kept(keep) * 60 / resolution)
        classes[f"rollups {resolution} s"] = rate("rollup_60_rows") * buckets * rollup_row
    classes["raw frames"] = rate("frame_0_bytes") * kept(policy.raw_accelerator) * frame_overhead
    for resolution, keep in (policy.frame_rollup or policy.rollup).items():
        buckets = max(1.0, kept(keep) * 60 / resolution)
        classes[f"frames {resolution} s"] = rate("frame_60_bytes") * buckets * frame_overhead
    live = sum(classes.values())
    # What the file holds beyond its tables: free pages, other tables (measured at the end).
    overhead = last["bytes"] / max(1, sum(size.values()))
    recent = [s for s in snapshots if s["sim_minutes"] >= last["sim_minutes"] - 20]
    recent_rate = (recent[-1]["bytes"] - recent[0]["bytes"]) / max(
        1, recent[-1]["sim_minutes"] - recent[0]["sim_minutes"]
    )
    return {
        "classes": classes,
        "overhead": overhead,
        "total": live * overhead,
        "recent_mib_per_hour": recent_rate * 60 / 2**20,
    }


class Clock:
    """The simulated wall clock every patched ``time.time`` / ``timezone.now`` reads."""

    def __init__(self, start: float) -> None:
        self.now = start

    def time(self) -> float:
        return self.now


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=int, default=60, help="simulated minutes to run")
    parser.add_argument("--cards", type=int, default=None, help="cards per twin (TWIN_DEMO_CARDS)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()

    var = Path(tempfile.mkdtemp(prefix="bench-demo-storage-"))
    path = var / "portal.sqlite3"
    os.environ.update(
        {
            "PORTAL_DEMO": "1",
            "PORTAL_VAR_DIR": str(var),
            "DATABASE_URL": f"sqlite:///{path}",
            "CELERY_BROKER_URL": "memory://",
            "DJANGO_SETTINGS_MODULE": "cluster_portal.settings",
            "LOG_LEVEL": "WARNING",
        }
    )
    os.environ.pop("DEBUG", None)  # DEBUG's query log is cleared after each task in the demo
    if args.cards:
        os.environ["TWIN_DEMO_CARDS"] = str(args.cards)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection, reset_queries
    from django.utils import timezone

    started = time.perf_counter()
    call_command("migrate", verbosity=0, interactive=False)
    call_command("seed_demo", verbosity=0)
    call_command("seed_twin", verbosity=0)
    call_command("seed_migrations", verbosity=0)
    print(f"seeded in {time.perf_counter() - started:.0f} s: {file_bytes(path) / 2**20:.1f} MiB")

    from cost.tasks import close_ledger_hours
    from simulation.models import TwinRun
    from simulation.services import twin_pool_tick, twin_tick
    from telemetry.tasks import compact_rollups, telemetry_retention

    clock = Clock(time.time())
    real_time = time.time
    time.time = clock.time  # type: ignore[assignment]
    timezone.now = lambda: datetime.fromtimestamp(clock.now, tz=UTC)  # type: ignore[assignment]

    def running() -> list[TwinRun]:
        return list(TwinRun.objects.filter(status=TwinRun.Status.RUNNING))

    tick_s: list[float] = []  # one run's scheduler tick
    interval_s: list[float] = []  # all tick-queue work of one 10 s interval (one worker)
    interval_cpu: list[float] = []  # the same in this process's CPU time (load-independent)
    other_s: dict[str, list[float]] = {"compaction": [], "ledger": [], "retention": []}
    snapshots = []
    total = args.minutes * 60
    wall = time.perf_counter()
    stopped_at = None
    try:
        for elapsed in range(0, total + 1, POOL):
            clock.now += POOL
            if elapsed % TICK == 0:
                interval_started = time.perf_counter()
                interval_cpu_started = time.process_time()
                for run in running():
                    t0 = time.perf_counter()
                    twin_tick(run_id=run.pk, expected_seq=run.tick_seq, tick_time=clock.now)
                    tick_s.append(time.perf_counter() - t0)
            for run in TwinRun.objects.filter(status=TwinRun.Status.RUNNING, tick_seq__gt=0):
                twin_pool_tick(run_id=run.pk, expected_seq=run.pool_seq)
            if elapsed % TICK == POOL:
                interval_s.append(time.perf_counter() - interval_started)
                interval_cpu.append(time.process_time() - interval_cpu_started)
            for name, every, task in (
                ("compaction", COMPACT, compact_rollups),
                ("ledger", LEDGER, close_ledger_hours),
                ("retention", RETENTION, telemetry_retention),
            ):
                if elapsed and elapsed % every == 0:
                    t0 = time.perf_counter()
                    task()
                    other_s[name].append(time.perf_counter() - t0)
            reset_queries()
            if elapsed % 600 == 0:
                connection.close()  # as a task's connection would be (CONN_MAX_AGE=0)
                count, free, size = pages(path)
                snap = {
                    "sim_minutes": elapsed // 60,
                    "bytes": file_bytes(path),
                    "wal_bytes": (var / "portal.sqlite3-wal").stat().st_size
                    if (var / "portal.sqlite3-wal").exists()
                    else 0,
                    "page_count": count,
                    "freelist_count": free,
                    "page_size": size,
                    "wall_s": round(time.perf_counter() - wall, 1),
                    **classes(path),
                }
                snapshots.append(snap)
                print(
                    f"sim {snap['sim_minutes']:3d} min: {snap['bytes'] / 2**20:8.1f} MiB "
                    f"(wal {snap['wal_bytes'] / 2**20:6.1f}), pages {count:,} free {free:,}, "
                    f"wall {snap['wall_s']:.0f} s",
                    flush=True,
                )
                print("   ", {k: v for k, v in snap.items() if "_rows" in k or "frame_" in k})
    except KeyboardInterrupt:
        # Ctrl-C (or SIGINT) on a loaded machine: report over the snapshots taken so far.
        stopped_at = elapsed // 60
        connection.close()
        print(f"stopped at simulated minute {stopped_at}: reporting the snapshots so far")
    finally:
        time.time = real_time  # type: ignore[assignment]
    tables = largest_tables(path, top=40)
    projection = project_day(snapshots, tables)
    print("largest tables and indexes:")
    for name, size in tables[:8]:
        print(f"  {name:50s} {size / 2**20:8.1f} MiB")
    print("a day of demo, projected per class (growth measured from minute 10 on, each class")
    print("kept for its retention or the day, whichever is shorter):")
    for name, size in projection["classes"].items():
        print(f"  {name:28s} {size / 2**20:8.1f} MiB")
    per_day = projection["total"]
    print(
        f"  total x {projection['overhead']:.2f} (free pages, table and index overhead): "
        f"{per_day / 2**20:,.0f} MiB; file growth in the last 20 minutes: "
        f"{projection['recent_mib_per_hour']:.0f} MiB per simulated hour"
    )
    print(
        f"scheduler tick per run: median {median(tick_s):.2f} s, p95 {p95(tick_s):.2f} s; "
        f"tick-queue work per {TICK} s interval: median {median(interval_s):.2f} s, "
        f"p95 {p95(interval_s):.2f} s (interval {TICK} s); its CPU time: median "
        f"{median(interval_cpu):.2f} s, p95 {p95(interval_cpu):.2f} s"
    )
    for name, values in other_s.items():
        if values:
            print(f"{name}: median {median(values):.2f} s, max {max(values):.2f} s")
    result = {
        "sim_minutes": snapshots[-1]["sim_minutes"] if stopped_at is not None else args.minutes,
        "stopped_at_minute": stopped_at,
        "cards": int(os.environ.get("TWIN_DEMO_CARDS", 4096)),
        "snapshots": snapshots,
        "largest": tables,
        "projection": projection,
        "per_day_bytes": per_day,
        "tick_median_s": median(tick_s),
        "tick_p95_s": p95(tick_s),
        "interval_median_s": median(interval_s),
        "interval_p95_s": p95(interval_s),
        "interval_cpu_median_s": median(interval_cpu),
        "interval_cpu_p95_s": p95(interval_cpu),
        "other": {k: {"median_s": median(v), "max_s": max(v)} for k, v in other_s.items() if v},
    }
    print(f"wrote {write_result('demo_storage', result)}")
    if not args.keep:
        for p in var.rglob("*"):
            if p.is_file():
                p.unlink()
    else:
        print(f"kept {var}")


if __name__ == "__main__":
    main()
