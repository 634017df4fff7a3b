"""The Celery application shared by web, workers and beat.

Periodic tasks live in one place, :mod:`cluster_portal.schedule`. Beat records its own
heartbeat each time it publishes a task, so the status page can tell a dead beat from a dead
worker (see :mod:`telemetry.catalogue.heartbeats`).
"""

from __future__ import annotations

import os
import socket

from celery import Celery
from celery.signals import (
    beat_init,
    before_task_publish,
    task_postrun,
    worker_process_init,
    worker_ready,
)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cluster_portal.settings")

app = Celery("cluster_portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

_process_role: dict[str, str] = {}


@app.on_after_finalize.connect
def _load_schedule(sender: Celery, **_: object) -> None:
    from cluster_portal.schedule import BEAT_SCHEDULE

    sender.conf.beat_schedule = BEAT_SCHEDULE


@beat_init.connect
def _mark_beat_process(sender: object = None, **_: object) -> None:
    _process_role["role"] = "beat"
    _record("beat", f"beat@{socket.gethostname()}")


@before_task_publish.connect
def _beat_heartbeat_on_publish(sender: str | None = None, **_: object) -> None:
    # Only the beat process records here: each dispatch proves beat is alive and ticking.
    if _process_role.get("role") == "beat":
        _record("beat", f"beat@{socket.gethostname()}")


@task_postrun.connect
def _tidy_after_task(**_: object) -> None:
    # With DEBUG on (the demo) Django keeps the last 9,000 queries of each connection with
    # their parameters; a web request clears them, a Celery task does not. A twin tick's
    # frame inserts carry megabytes of bytes each, so a worker grew past 1 GB in minutes.
    from django.db import reset_queries

    from cluster_portal.web.heap import release_free_memory

    reset_queries()
    # A tick frees tens of MiB of arrays; hand those pages back instead of letting the
    # worker's resident set drift upwards (cluster_portal.web.heap).
    release_free_memory()


@worker_process_init.connect
def _settle_heap(**_: object) -> None:
    # A pool process starts with the parent's whole heap: keep full collections off it.
    from cluster_portal.web.heap import settle_heap

    settle_heap()


@worker_ready.connect
def _worker_ready(sender: object = None, **_: object) -> None:
    hostname = getattr(sender, "hostname", None) or f"worker@{socket.gethostname()}"
    _record("worker", hostname)


def _record(kind: str, name: str) -> None:
    from telemetry.catalogue.heartbeats import heartbeat_record

    try:
        heartbeat_record(kind=kind, name=name)
        if kind == "beat":
            from django.db import reset_queries

            reset_queries()  # beat runs no tasks: clear the DEBUG query log here
    except Exception:  # noqa: BLE001 - a heartbeat must never take down beat or a worker
        import logging

        logging.getLogger(__name__).warning("could not record %s heartbeat", kind, exc_info=True)
