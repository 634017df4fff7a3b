"""gunicorn settings for the portal: ``gunicorn -c python:cluster_portal.gunicorn_conf …``.

**A liveness answer that never queues.** ``/healthz`` on the main port is served by the same
workers as everything else, so while every worker thread is busy (30 dashboard readers on two
workers) it waited its turn: 12.8 s at the median, and a liveness probe would have restarted a
healthy portal. With ``PORTAL_HEALTH_BIND`` set (``0.0.0.0:8001``), the gunicorn master itself
answers ``GET /healthz`` on that address from a small thread of its own: 200 while it has live
workers (it kills and replaces a worker that stops heartbeating, after ``--timeout``), 503 when
it has none. Nothing there touches Django, the database or a worker, so the answer takes
milliseconds however loaded the workers are. Point the liveness probe at it; keep ``/readyz``
(database and broker) on the main port for readiness.

**One latency histogram for all workers.** ``PROMETHEUS_MULTIPROC_DIR`` (default
``var/prometheus``) is set and emptied when the master starts, before any worker imports
``prometheus_client``: each worker writes its request histogram there and ``/metrics`` sums
them (``cluster_portal.web.request_metrics``).

Command-line flags still override everything here (``--workers``, ``--threads``, ``--bind``).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

# The portal's threaded worker: it knows how long each request waited for a thread
# (remote-write sheds what its sender gave up on, cluster_portal.web.queue_time).
worker_class = "cluster_portal.web.queue_time.QueueTimedWorker"
threads = int(os.environ.get("WEB_THREADS", "2"))

HEALTH_BIND = os.environ.get("PORTAL_HEALTH_BIND", "").strip()

_VAR_DIR = Path(os.environ.get("PORTAL_VAR_DIR") or Path(__file__).resolve().parent.parent / "var")


def on_starting(server) -> None:
    # In the master, before it forks: every worker inherits the directory. A previous
    # server's files would be summed into this one's histograms, so it starts empty.
    default = _VAR_DIR / "prometheus"
    directory = Path(os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", str(default)))
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True, exist_ok=True)


def child_exit(server, worker) -> None:
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def _handler(arbiter) -> type[BaseHTTPRequestHandler]:
    class Health(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if self.path.split("?", 1)[0] != "/healthz":
                self.send_error(404)
                return
            workers = len(getattr(arbiter, "WORKERS", {}) or {})
            status = 200 if workers else 503
            body = json.dumps({"status": "ok" if workers else "no workers", "workers": workers})
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Cache-Control", "no-store")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args) -> None:  # probes every few seconds: no log line each
            pass

    return Health


def when_ready(server) -> None:
    if not HEALTH_BIND:
        return
    host, _sep, port = HEALTH_BIND.rpartition(":")
    listener = ThreadingHTTPServer((host.strip("[]") or "0.0.0.0", int(port)), _handler(server))
    listener.daemon_threads = True
    server.portal_health_listener = listener
    threading.Thread(target=listener.serve_forever, name="portal-health", daemon=True).start()
    server.log.info("liveness answered by the master on %s/healthz", HEALTH_BIND)


def post_fork(server, worker) -> None:
    # A worker inherits the master's listening socket; only the master answers on it.
    listener = getattr(server, "portal_health_listener", None)
    if listener is not None:
        listener.socket.close()
