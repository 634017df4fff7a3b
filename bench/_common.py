"""Shared helpers for the benchmarks: machine facts, a throw-away PostgreSQL database, results.

Benchmarks are scripts, not tests: they print figures and write ``bench/results/<name>.json``.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
PG_ADMIN_URL = os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432")


def machine() -> dict:
    mem_kib = 0
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    mem_kib = int(line.split()[1])
    except OSError:
        pass
    return {
        "cpus": os.cpu_count(),
        "mem_gib": round(mem_kib / 2**20, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def write_result(name: str, payload: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    body = {
        "benchmark": name,
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "machine": machine(),
        **payload,
    }
    path.write_text(json.dumps(body, indent=2) + "\n")
    return path


def _psql(sql: str) -> None:
    subprocess.run(
        ["psql", f"{PG_ADMIN_URL}/postgres", "-q", "-c", sql], check=True, capture_output=True
    )


def _exists(db: str) -> bool:
    result = subprocess.run(
        [
            "psql",
            f"{PG_ADMIN_URL}/postgres",
            "-At",
            "-c",
            f"SELECT 1 FROM pg_database WHERE datname = '{db}'",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return result.stdout.strip() == "1"


_REUSED: dict[str, bool] = {}


@contextmanager
def fresh_postgres(name: str, *, keep: bool = False):
    """A new, migrated PostgreSQL database for one benchmark; dropped afterwards.

    With ``keep`` an existing database of that name is reused (see :func:`reused`) and left
    in place afterwards, so a slow-to-build dataset can be measured again while profiling.
    """
    # BENCH_DB_SUFFIX keeps engineers sharing one server off each other's databases.
    db = f"bench_{name}{os.environ.get('BENCH_DB_SUFFIX', '')}"
    url = f"{PG_ADMIN_URL}/{db}"
    _REUSED[url] = keep and _exists(db)
    if not _REUSED[url]:
        _psql(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
        _psql(f"CREATE DATABASE {db}")
    env = {**os.environ, "DATABASE_URL": url}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    try:
        yield url
    finally:
        if not keep:
            _psql(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")


def reused(url: str) -> bool:
    """Whether :func:`fresh_postgres` found the database already built (``keep=True``)."""
    return _REUSED.get(url, False)


def django_setup(database_url: str) -> None:
    """Configure Django in this process against ``database_url`` (call before model imports)."""
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cluster_portal.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
