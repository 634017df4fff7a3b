"""What the status page shows about workers and beat."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from telemetry.models import Heartbeat


@dataclass(frozen=True)
class ProcessStatus:
    kind: str
    name: str
    last_seen: datetime
    age_seconds: float
    alive: bool
    beats: int
    paused: bool = False  # stopped on purpose (a paused twin run): neither alive nor down

    @property
    def state(self) -> str:
        """``alive``, ``paused`` or ``down``."""
        return "alive" if self.alive else "paused" if self.paused else "down"

    @property
    def kind_label(self) -> str:
        """The kind in the reader's language (``kind`` stays the code)."""
        return str(dict(Heartbeat.Kind.choices).get(self.kind, self.kind))


def heartbeat_statuses(*, now: datetime | None = None) -> list[ProcessStatus]:
    now = now or timezone.now()
    stale = timedelta(seconds=settings.HEARTBEAT_STALE_AFTER_SECONDS)
    return [
        ProcessStatus(
            kind=hb.kind,
            name=hb.name,
            last_seen=hb.last_seen,
            age_seconds=max(0.0, (now - hb.last_seen).total_seconds()),
            alive=not hb.paused and now - hb.last_seen <= stale,
            beats=hb.beats,
            paused=hb.paused,
        )
        for hb in Heartbeat.objects.order_by("kind", "-last_seen")
    ]


def any_alive(statuses: list[ProcessStatus], kind: str) -> bool:
    return any(s.alive for s in statuses if s.kind == kind)
