"""Running totals the store keeps with its writes (``StoreCounter``): counters for ``/metrics``.

:func:`counter_add` must run inside the transaction of the rows it counts (the callers wrap
both in one ``atomic`` block), so a total never counts what was rolled back or lost to a killed
worker, and never counts a committed write twice.
"""

from __future__ import annotations

import os

from django.db import connection
from django.db.models import F, Sum

from telemetry.models import StoreCounter

SHARDS = 16  # concurrent writers rarely share a shard's row lock (process id modulo SHARDS)

SAMPLES_STORED = "samples_stored"
INGESTION_BATCHES = "ingestion_batches"

_PG_ADD = """
INSERT INTO monitoring_storecounter (name, shard, value) VALUES (%s, %s, %s)
ON CONFLICT (name, shard) DO UPDATE SET value = monitoring_storecounter.value + EXCLUDED.value
"""


def counter_add(name: str, amount: int) -> None:
    """Add ``amount`` to the counter ``name`` (nothing for 0), in the caller's transaction."""
    if amount <= 0:
        return
    shard = os.getpid() % SHARDS
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_PG_ADD, [name, shard, amount])
        return
    updated = StoreCounter.objects.filter(name=name, shard=shard).update(value=F("value") + amount)
    if not updated:  # SQLite serialises writers: no concurrent first insert of the same shard
        StoreCounter.objects.create(name=name, shard=shard, value=amount)


def counter_totals() -> dict[str, int]:
    """Every counter's total over its shards."""
    rows = StoreCounter.objects.values("name").annotate(total=Sum("value"))
    return {row["name"]: int(row["total"] or 0) for row in rows}
