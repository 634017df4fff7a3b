"""A per-process memo of what a series' label set maps to (issue 22 §6).

A Prometheus remote-writing a fleet sends the same series every scrape; mapping a sample's
labels (host, chip id, MIG slice, attributes, attribution, the labels left over) cost a third
of the receiver's CPU although it is a pure function of the label set. The memo keys that
result by everything it depends on — the exporter flavour, the class of the metric name
(node metric / chip family / other), the call's ``source``, ``node=`` and host-label chain,
and the series' labels themselves — so it never needs invalidating: a card moved to another
host, a new MIG slice, a relabelled series or a cluster's new host labels are a *different
key* and are mapped afresh, and the registration downstream (``telemetry.catalogue.known``)
still sees the full description and records moves and new cards. Values (NaN, blanks) are
checked per sample, never cached.

Keyed per card, not per series (the metric name is not in the key, only its class): a
10,240-card fleet is ~10,000 entries (~1 KB each), not 225,000. Bounded, least recently used
first out (:data:`MAX_ENTRIES`). Cached values are shared between requests and never mutated.
docs/architecture.md §3.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

__all__ = ["SERIES", "MAX_ENTRIES", "SeriesCache"]

MAX_ENTRIES = 50_000  # label sets (cards, MIG slices, nodes): 5× a 10,240-card fleet


class SeriesCache:
    """Bounded LRU ``key → mapping result``; thread-safe (gunicorn's threaded workers)."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> Any | None:
        with self._lock:
            value = self._entries.get(key)
            if value is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return value

    def put(self, key: Hashable, value: Any) -> None:
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)


SERIES = SeriesCache()
