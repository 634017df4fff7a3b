"""Accelerator health from ingested samples, copied onto the inventory row.

Every path that learns a card's health calls this one function: the exporter pipeline
(:mod:`telemetry.ingest.pipeline`) and the PromQL source sync
(:mod:`telemetry.receivers.promql_sync`), so cards, absence and alerts agree on both.
"""

from __future__ import annotations

import time

from django.db import transaction

from inventory.models import Accelerator
from telemetry.catalogue.known import KNOWN

HEALTH_MEMO_SECONDS = 30.0  # accelerator_health_apply: how long a written health is trusted


def accelerator_health_apply(updates: dict[int, int], *, slices: set[int] = frozenset()) -> None:
    """Copy the latest health sample per accelerator entity onto the inventory row (only
    rows whose health changes are written). A MIG slice's health (``slices``: the entity ids
    that are slices) is its GPU's too: XIDs and ECC are device faults, so the GPU shows the
    worst health its reporting slices show."""
    # Most batches repeat the health their cards already have: a card this process wrote (or
    # found) at the same value less than HEALTH_MEMO_SECONDS ago costs no query. A change is
    # always written; what another process changed since is corrected within that time.
    now = time.monotonic()
    applied = KNOWN.get_many("health", updates)
    updates = {
        entity_id: health
        for entity_id, health in updates.items()
        if (entry := applied.get(entity_id)) is None
        or entry[0] != health
        or now - entry[1] >= HEALTH_MEMO_SECONDS
    }
    if not updates:
        return
    written = {entity_id: (health, now) for entity_id, health in updates.items()}
    transaction.on_commit(lambda: KNOWN.put_many("health", written))
    by_value: dict[int, list[int]] = {}
    for entity_id, health in updates.items():
        by_value.setdefault(health, []).append(entity_id)
    for health, entity_ids in by_value.items():
        Accelerator.objects.filter(entity__id__in=entity_ids).exclude(health=health).update(
            health=health
        )
    for health in (Accelerator.Health.HEALTHY, Accelerator.Health.UNHEALTHY):  # worst last
        reported = [e for e in by_value.get(health, ()) if e in slices]
        if reported:
            Accelerator.objects.filter(slices__entity__id__in=reported).exclude(
                health=health
            ).update(health=health)
