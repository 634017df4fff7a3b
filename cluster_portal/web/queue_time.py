"""How long the current request waited before a worker thread took it (issue 22 §6).

Two sources, the larger wins:

- gunicorn's threaded worker with ``--worker-class cluster_portal.web.queue_time.QueueTimedWorker``
  stamps each connection when it is handed to the thread pool, so the wait in the pool's queue
  (where requests pile up when every thread is busy) is known;
- a proxy in front may send ``X-Request-Start: t=<unix time>`` (seconds, milli- or
  microseconds, the convention of HAProxy/nginx setups), which also covers its own queue.
  The header is honoured only behind a configured proxy (``TRUSTED_PROXY_COUNT`` > 0, the
  setting that also says whose ``X-Forwarded-For`` to believe): without one any client could
  stamp its request as old and have it shed; a stamp from the future is ignored.

Used by the remote-write receiver to shed a request its sender has already given up on.
"""

from __future__ import annotations

import threading
import time

from django.conf import settings
from gunicorn.workers.gthread import ThreadWorker

__all__ = ["QueueTimedWorker", "queued_seconds"]

_CURRENT = threading.local()


class QueueTimedWorker(ThreadWorker):
    """gunicorn's ``gthread`` worker that remembers when each request was queued."""

    def enqueue_req(self, conn) -> None:
        conn.portal_queued_at = time.time()
        super().enqueue_req(conn)

    def handle(self, conn):
        _CURRENT.queued_at = getattr(conn, "portal_queued_at", None)
        try:
            return super().handle(conn)
        finally:
            _CURRENT.queued_at = None


def _header_start(value: str) -> float | None:
    value = value.strip().removeprefix("t=")
    try:
        stamp = float(value)
    except ValueError:
        return None
    while stamp > 1e11:  # milli- or microseconds
        stamp /= 1000
    return stamp


def queued_seconds(meta: dict, now: float | None = None) -> float:
    """Seconds the request in ``meta`` (a WSGI environ) waited before this thread took it."""
    now = time.time() if now is None else now
    starts = [getattr(_CURRENT, "queued_at", None)]
    header = meta.get("HTTP_X_REQUEST_START")
    if header and getattr(settings, "TRUSTED_PROXY_COUNT", 0) > 0:
        starts.append(_header_start(header))
    waits = [now - start for start in starts if start is not None and start <= now]
    return max(waits, default=0.0)
