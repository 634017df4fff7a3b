"""Monitoring's Celery tasks. Every task states its delivery options explicitly."""

from __future__ import annotations

import socket

from celery import shared_task
from django.utils import timezone

from monitoring.services.heartbeats import heartbeat_record
from monitoring.telemetry.retention import RetentionPolicy, telemetry_prune


@shared_task(
    name="monitoring.heartbeat",
    bind=True,
    acks_late=True,
    # A heartbeat is only worth something when fresh; a late one would lie about liveness.
    expires=30,
    max_retries=0,
    ignore_result=False,
)
def heartbeat(self) -> dict:
    """Record that the worker executing this task is alive."""
    worker = self.request.hostname or f"worker@{socket.gethostname()}"
    record = heartbeat_record(kind="worker", name=worker)
    return {"worker": worker, "at": timezone.now().isoformat(), "beats": record.beats}


@shared_task(
    name="monitoring.telemetry_retention",
    acks_late=True,
    # Idempotent: a late or repeated run deletes what is expired at that moment, nothing more.
    expires=600,
    max_retries=0,
)
def telemetry_retention() -> dict[str, int]:
    """Delete raw samples and rollups older than settings.TELEMETRY_RETENTION."""
    return telemetry_prune(policy=RetentionPolicy.from_settings())
