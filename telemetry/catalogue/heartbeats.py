"""Recording liveness of workers and beat."""

from __future__ import annotations

from django.db.models import F
from django.utils import timezone

from telemetry.models import Heartbeat


def heartbeat_record(*, kind: str, name: str) -> Heartbeat:
    """Mark ``name`` of ``kind`` as alive now. One row per process name; concurrent-safe."""
    now = timezone.now()
    updated = Heartbeat.objects.filter(kind=kind, name=name).update(
        last_seen=now, beats=F("beats") + 1, paused=False
    )
    if not updated:
        heartbeat, created = Heartbeat.objects.get_or_create(
            kind=kind, name=name, defaults={"last_seen": now, "beats": 1}
        )
        if not created:
            Heartbeat.objects.filter(pk=heartbeat.pk).update(
                last_seen=now, beats=F("beats") + 1, paused=False
            )
    return Heartbeat.objects.get(kind=kind, name=name)


def heartbeat_pause(*, kind: str, name: str) -> int:
    """Mark ``name`` of ``kind`` as stopped on purpose (a paused twin run): the status page shows
    it as paused, not down, until its next beat. Returns the rows marked."""
    return Heartbeat.objects.filter(kind=kind, name=name).update(paused=True)
