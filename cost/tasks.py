"""Cost's Celery tasks. Every task states its delivery options explicitly."""

from __future__ import annotations

from celery import shared_task

from cost.services import ledger_hours_close


@shared_task(
    name="cost.close_ledger_hours",
    acks_late=True,
    # Idempotent (each hour is written once under the cluster's row lock, in one transaction):
    # a copy that waited past the next beat is superseded by it, a redelivery writes nothing.
    expires=60,
    max_retries=0,
)
def close_ledger_hours() -> dict[str, int]:
    """Persist every ended hour of the allocation ledger; revise hours late data changed."""
    return ledger_hours_close()
