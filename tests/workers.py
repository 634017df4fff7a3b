"""Real Celery worker processes for the tests that need one (no eager mode).

The worker runs against the test database (committed data only: use
``django_db(transaction=True)``) and a private queue on the real Redis broker.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

from django.conf import settings
from django.db import connection

from cluster_portal.env import tcp_reachable

ROOT = Path(__file__).resolve().parents[1]


def redis_broker_url() -> str | None:
    url = settings.CELERY_BROKER_URL
    if url.startswith("redis://"):
        return url
    if tcp_reachable("127.0.0.1", 6379):
        return "redis://127.0.0.1:6379/0"
    return None


def database_url_for_subprocess() -> str:
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    host = db.get("HOST") or "127.0.0.1"
    user = db.get("USER") or "postgres"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{user}{password}@{host}:{db.get('PORT') or 5432}/{db['NAME']}"


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


class Worker:
    """A solo-pool Celery worker subprocess whose output is collected in the background."""

    def __init__(
        self, queue: str, broker: str, var_dir: Path, *, name: str | None = None, **extra_env: str
    ) -> None:
        # ``queue`` may list several queues (``ticks,gates``), as ``celery worker -Q`` takes.
        self.name = f"{name or queue}-{uuid.uuid4().hex[:4]}@test"
        env = {
            **os.environ,
            "CELERY_BROKER_URL": broker,
            "DATABASE_URL": database_url_for_subprocess(),
            "PORTAL_VAR_DIR": str(var_dir),
            **extra_env,
        }
        self.process = subprocess.Popen(
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
                "-n",
                self.name,
                "--loglevel=INFO",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line)

    def saw(self, text: str) -> bool:
        return any(text in line for line in self.lines)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
