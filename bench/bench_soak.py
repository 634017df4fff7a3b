"""Benchmark: soak — the demo's real processes against the twin for an hour, RSS over time.

Runs what ``make demo`` runs (the Procfile's web, worker and beat) on a private ``PORTAL_VAR_DIR``
with the demo's SQLite database (or ``--database-url``), the demo twin (``seed_twin``: 8,192
Ascend cards + a 1,024-card legacy cluster, 10 simulated minutes per 10 s tick) and Celery on
Redis (``BENCH_REDIS_URL``, DB 5 by default). A client thread reads the dashboard data
endpoints as a user would (one endpoint every few seconds). Every ``--every`` seconds it
samples the resident set (``VmRSS``) of every process in each tree and the database size,
prints one line, and rewrites ``bench/results/soak.json`` so a killed run still leaves data.

Run: ``python bench/bench_soak.py --minutes 60`` (``--cards`` to change the twin size).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, write_result  # noqa: E402

REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/5")
PAGES = (
    "/api/v1/dashboards/overview/?cluster=unified-demo&range=1h",
    "/api/v1/dashboards/overview/?cluster=unified-demo&range=24h",
    "/api/v1/dashboards/hardware/?cluster=unified-demo&range=6h",
    "/api/v1/dashboards/memory/?cluster=unified-demo&range=6h",
    "/api/v1/dashboards/network/?cluster=unified-demo&range=6h",
    "/api/v1/dashboards/workloads/?cluster=unified-demo&range=6h",
    "/api/v1/cost/clusters/?hours=24",
)


def rss_mib(pid: int) -> float | None:
    """Resident set of ``pid`` in MiB (psutil if installed, else ``/proc``)."""
    try:
        import psutil

        return psutil.Process(pid).memory_info().rss / 2**20
    except ImportError:
        pass
    except Exception:  # noqa: BLE001 - process gone
        return None
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def descendants(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        path = task / "children"
        if path.exists():
            for child in path.read_text().split():
                out.append(int(child))
                out += descendants(int(child))
    return out


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:80]
    except OSError:
        return "?"


def db_bytes(var: Path, database_url: str | None) -> int:
    if database_url:
        out = subprocess.run(
            ["psql", database_url, "-At", "-c", "SELECT pg_database_size(current_database())"],
            capture_output=True,
            text=True,
        )
        return int(out.stdout.strip() or 0)
    return sum(p.stat().st_size for p in var.glob("portal.sqlite3*"))


# The demo's retention (settings with PORTAL_DEMO=1), in hours: raw frames and minute frames
# 1 h, 15-minute frames 12 h, hourly frames 30 days, raw rows 6 h; retention runs every 10
# minutes (hence the extra 1/6 h).
DEMO_KEEP_HOURS = {0: 1 + 1 / 6, 60: 1 + 1 / 6, 900: 12 + 1 / 6, 3600: 30 * 24, 86400: 1100 * 24}
DEMO_RAW_ROW_HOURS = 6 + 1 / 6


def sqlite_storage(path: Path, hours_run: float) -> dict:
    """Where the SQLite file's bytes are, and what a day of running adds up to.

    Measured per class from the rows: raw frames as bytes per hour of the run, rollup frames
    as bytes per bucket (a bucket is rewritten in place as it fills), samples and rollup
    rows per hour. A day is each class at min(24 h, its retention), and the file's measured
    overhead over the payload (pages, indexes, free pages) is applied to the total.
    """
    import sqlite3

    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    frames = {
        int(resolution): (int(rows), int(buckets), int(size or 0))
        for resolution, rows, buckets, size in db.execute(
            'SELECT resolution, count(*), count(DISTINCT ts), sum(length(coalesce("values", '
            "x'')) + length(coalesce(count, x'')) + length(coalesce(sum, x'')) + "
            "length(coalesce(min, x'')) + length(coalesce(max, x''))) "
            "FROM monitoring_frame GROUP BY resolution"
        )
    }
    samples = db.execute("SELECT count(*) FROM monitoring_sample").fetchone()[0]
    rollups = db.execute("SELECT count(*) FROM monitoring_rollup").fetchone()[0]
    file_bytes = sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))
    row_bytes = 60  # a sample or rollup row with its index entries (order of size)
    hours = max(hours_run, 1e-6)
    payload = sum(size for _, _, size in frames.values()) + (samples + rollups) * row_bytes
    overhead = file_bytes / payload if payload else 1.0
    day = 0.0
    for resolution, (_, buckets, size) in frames.items():
        keep = min(24.0, DEMO_KEEP_HOURS.get(resolution, 24.0))
        if resolution == 0:
            day += size / min(hours, keep) * keep
        else:
            per_bucket = size / max(buckets, 1)
            day += per_bucket * (keep * 3600 / resolution + 1)
    day += samples * row_bytes / hours * min(24.0, DEMO_RAW_ROW_HOURS)
    day += rollups * row_bytes / hours * 24
    return {
        "file_mib": round(file_bytes / 2**20, 1),
        "frames": {
            str(r): {"rows": n, "buckets": k, "mib": round(b / 2**20, 1)}
            for r, (n, k, b) in frames.items()
        },
        "samples": samples,
        "rollup_rows": rollups,
        "overhead": round(overhead, 2),
        "hours_run": round(hours_run, 2),
        "estimated_day_mib": round(day * overhead / 2**20),
    }


def manage(env: dict, *args: str) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True)


def reader(base: str, token: str, stop: threading.Event, stats: dict) -> None:
    i = 0
    while not stop.is_set():
        path = PAGES[i % len(PAGES)]
        i += 1
        request = urllib.request.Request(base + path, headers={"Authorization": f"Bearer {token}"})
        started = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                response.read()
            stats["ok"] += 1
            stats["ms"].append((time.perf_counter() - started) * 1000)
        except (OSError, ValueError) as exc:
            stats["errors"] += 1
            stats["last_error"] = f"{path}: {exc}"
        stop.wait(3.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--every", type=float, default=30, help="seconds between samples")
    parser.add_argument("--cards", type=int, default=8192)
    parser.add_argument("--database-url", default=None, help="default: SQLite in the var dir")
    parser.add_argument("--var-dir", default=None, help="default: a new temporary directory")
    parser.add_argument("--no-web", action="store_true")
    parser.add_argument(
        "--max-memory-per-child",
        type=int,
        default=0,
        help="KiB; the Procfile sets 400000 as a backstop, off here so growth shows",
    )
    parser.add_argument("--name", default="soak", help="results file bench/results/<name>.json")
    args = parser.parse_args()

    var = Path(args.var_dir or tempfile.mkdtemp(prefix="cp-soak-"))
    var.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "PORTAL_VAR_DIR": str(var),
        "DEBUG": "1",  # as `make demo` runs it
        "PORTAL_DEMO": "1",
        "CELERY_BROKER_URL": REDIS_URL,
        "CACHE_URL": REDIS_URL,
        "TWIN_DEMO_CARDS": str(args.cards),
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("DATABASE_URL", None)
    if args.database_url:
        env["DATABASE_URL"] = args.database_url
    subprocess.run(["redis-cli", "-u", REDIS_URL, "FLUSHDB"], capture_output=True)
    manage(env, "migrate", "--noinput", "-v0")
    manage(env, "seed_twin")
    token = (
        subprocess.run(
            [
                sys.executable,
                "manage.py",
                "shell",
                "-c",
                "from accounts.services.tokens import token_create;"
                "print(token_create(name='soak', scopes=['read']).plaintext)",
            ],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    celery = [sys.executable, "-m", "celery", "-A", "cluster_portal"]
    commands = {  # the Procfile's three processes
        "worker": [
            *celery,
            "worker",
            "--loglevel=WARNING",
            "--concurrency=2",
            "--without-gossip",
            "--without-mingle",
            *(
                [f"--max-memory-per-child={args.max_memory_per_child}"]
                if args.max_memory_per_child
                else []
            ),
        ],
        "beat": [*celery, "beat", "--loglevel=WARNING", "-s", str(var / "celerybeat-schedule")],
    }
    if not args.no_web:
        commands["web"] = [
            sys.executable,
            "manage.py",
            "runserver",
            f"127.0.0.1:{port}",
            "--noreload",
        ]
    logs = {name: open(var / f"{name}.log", "w") for name in commands}  # noqa: SIM115
    procs = {
        name: subprocess.Popen(
            cmd,
            cwd=ROOT,
            env=env,
            stdout=logs[name],
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        for name, cmd in commands.items()
    }
    stop = threading.Event()
    stats = {"ok": 0, "errors": 0, "ms": [], "last_error": ""}
    if "web" in procs:
        base = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                urllib.request.urlopen(base + "/healthz", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        threading.Thread(target=reader, args=(base, token, stop, stats), daemon=True).start()

    samples: list[dict] = []
    started = time.monotonic()
    deadline = started + args.minutes * 60

    def record(final: bool = False, storage: dict | None = None) -> None:
        peaks: dict[str, float] = {}
        for sample in samples:
            for label, mib in sample["rss_mib"].items():
                peaks[label] = max(peaks.get(label, 0.0), mib)
        write_result(
            args.name,
            {
                "minutes": round((time.monotonic() - started) / 60, 1),
                "cards": args.cards,
                "database": "postgresql" if args.database_url else "sqlite",
                "var_dir": str(var),
                "complete": final,
                "web_requests": stats["ok"],
                "web_errors": stats["errors"],
                "peak_rss_mib": peaks,
                "storage": storage,
                "samples": samples,
            },
        )

    try:
        while time.monotonic() < deadline:
            for name, proc in procs.items():
                if proc.poll() is not None:
                    raise RuntimeError(
                        f"{name} exited with {proc.returncode}; see {var}/{name}.log"
                    )
            rss: dict[str, float] = {}
            for name, proc in procs.items():
                for n, pid in enumerate([proc.pid, *descendants(proc.pid)]):
                    mib = rss_mib(pid)
                    if mib is not None:
                        rss[name if n == 0 else f"{name}.child{n}"] = round(mib, 1)
            size = db_bytes(var, args.database_url)
            elapsed = time.monotonic() - started
            samples.append(
                {"t_s": round(elapsed), "rss_mib": rss, "db_mib": round(size / 2**20, 1)}
            )
            print(
                f"{elapsed / 60:6.1f} min  db {size / 2**20:8.1f} MiB  "
                + "  ".join(f"{k} {v:.0f}" for k, v in rss.items())
                + f"  web ok {stats['ok']} err {stats['errors']}",
                flush=True,
            )
            record()
            time.sleep(max(0.0, min(args.every, deadline - time.monotonic())))
    finally:
        stop.set()
        for proc in procs.values():
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for proc in procs.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        storage = None
        if not args.database_url:
            storage = sqlite_storage(var / "portal.sqlite3", (time.monotonic() - started) / 3600)
            print("storage:", storage)
        record(final=True, storage=storage)
        if stats["last_error"]:
            print("last web error:", stats["last_error"])
        if not args.var_dir:
            print(f"var dir kept for inspection: {var} (remove with rm -r)")


if __name__ == "__main__":
    main()
