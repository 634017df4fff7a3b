"""A per-process memo of the ids ingestion has already resolved: metrics, entities, devices.

A Prometheus remote-writing a fleet sends the same cards and metric names every 15 s in
requests of a few hundred samples each; resolving them again on every request (and offering
every card to the registration service again) cost most of the receiver's time. Entries are
only ever added for rows that exist, and what a cached entry stands for is everything the
slow path reads: a device is cached under its whole description (host, index, chip id, model,
attributes), so a card that moves host, changes model or appears for the first time misses
the memo and goes through registration (where moves and new cards are recorded).

Two namespaces hold what this process last *wrote* for a card rather than an id, so a repeat
costs no query: ``health`` (value and when, ``ingest.health``) and ``attribution`` (the
card's open interval, ``ingest.attribution``); both are filled only after a commit.

Entries are filled **only after the writing transaction commits**
(:meth:`KnownIds.put_after_commit`, ``transaction.on_commit``): a row created in a transaction
that rolls back (a killed scrape, a refused batch) never reaches the memo, so no other request
writes samples under its id.

Invalidation (docs/architecture.md §3):

- ids are never reused (sequences), so a stale entry can only point at a deleted row; the
  store's insert then finds it missing (``StaleReference``) and the writer clears the memo and
  retries once (:func:`telemetry.ingest.pipeline.ingest_mapping_report`);
- deleting an entity, metric or cluster in this process clears the memo at once (signals in
  ``telemetry.apps``);
- the memo is bounded (:data:`MAX_ENTRIES`): past it, it starts again empty.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable

from django.db import transaction

__all__ = ["KNOWN", "KnownIds", "MAX_ENTRIES"]

MAX_ENTRIES = 500_000  # ~ 40 bytes of key per entry: a 10,240-card fleet uses ~25,000


class KnownIds:
    """``(namespace, key) → id`` for rows known to exist; thread-safe, bounded."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._ids: dict[tuple[str, Hashable], int] = {}
        self._lock = threading.Lock()
        self.generation = 0  # bumped by every clear: a test or a retry can tell it happened

    def get_many(self, namespace: str, keys) -> dict:
        """The cached ids of ``keys`` (those not cached are absent)."""
        ids = self._ids
        found = {}
        for key in keys:
            value = ids.get((namespace, key))
            if value is not None:
                found[key] = value
        return found

    def get(self, namespace: str, key: Hashable) -> int | None:
        return self._ids.get((namespace, key))

    def put_many(self, namespace: str, items: dict) -> None:
        with self._lock:
            if len(self._ids) + len(items) > self.max_entries:
                self._ids = {}
                self.generation += 1
            for key, value in items.items():
                self._ids[(namespace, key)] = value

    def put_after_commit(self, namespace: str, items: dict) -> None:
        """:meth:`put_many` once the current transaction commits (at once outside one); a
        rollback, including of the savepoint it was called in, drops it."""
        if items:
            items = dict(items)
            transaction.on_commit(lambda: self.put_many(namespace, items))

    def clear(self) -> None:
        with self._lock:
            self._ids = {}
            self.generation += 1

    def __len__(self) -> int:
        return len(self._ids)


KNOWN = KnownIds()
