"""Queueing Celery work for committed rows without ever failing the command that committed.

A command (start a plan, queue a what-if) commits its rows first and sends its tasks after the
commit (``transaction.on_commit``): a rolled-back transaction queues nothing. When the broker
is unreachable at that moment the command has still happened — answering 500 would make the
client retry a command that succeeded (and get 409). So a failed send is logged, never
raised; the row stays pending, and a periodic sweep (``cluster_portal.schedule``) finds rows
whose task never arrived and sends them again. Each task claims its row with a conditional
update, so a swept copy of a task that was in fact queued does no work twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import transaction

logger = logging.getLogger(__name__)


def dispatch_now(what: str, send: Callable[[], object]) -> bool:
    """Call ``send`` (which publishes a task); log and return False if the broker fails."""
    try:
        send()
    except Exception as exc:  # noqa: BLE001 - kombu, redis-py and the OS raise different types
        logger.warning(
            "could not queue %s (%s: %s); the periodic sweep will send it",
            what,
            type(exc).__name__,
            exc,
        )
        return False
    return True


def dispatch_after_commit(what: str, send: Callable[[], object]) -> None:
    """Run ``send`` once the current transaction commits (at once outside one), tolerantly."""
    transaction.on_commit(lambda: dispatch_now(what, send))
