"""Liveness records written by Celery workers and beat, read by the status page."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class Heartbeat(models.Model):
    """The last time a worker, the beat scheduler or a kind of twin tick proved it was running.

    Kept in the database rather than asked of the broker so it works on the embedded
    filesystem broker too (which cannot broadcast ``inspect ping``).
    """

    class Kind(models.TextChoices):
        WORKER = "worker", _("worker")
        BEAT = "beat", _("beat")
        TICK = "tick", _("twin tick")

    kind = models.CharField(_("kind"), max_length=16, choices=Kind.choices)
    name = models.CharField(_("name"), max_length=200)
    first_seen = models.DateTimeField(_("first seen"), auto_now_add=True)
    last_seen = models.DateTimeField(_("last seen"))
    beats = models.PositiveBigIntegerField(_("beats"), default=0)
    # Stopped on purpose (a paused twin run): shown as paused, not as down; the next beat
    # clears it.
    paused = models.BooleanField(_("paused"), default=False)

    class Meta:
        db_table = "monitoring_heartbeat"  # kept from before the app split
        ordering = ["kind", "name"]
        verbose_name = _("heartbeat")
        verbose_name_plural = _("heartbeats")
        constraints = [
            models.UniqueConstraint(fields=["kind", "name"], name="heartbeat_unique_kind_name")
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"
