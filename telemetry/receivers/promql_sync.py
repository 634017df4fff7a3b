"""Sync a PromQL data source: register the cards its server reports and record who holds them.

A cluster read through a PromQL source stores no samples, so the store path's attribution
(``telemetry.ingest.pipeline`` feeding ``ingest.attribution``) never sees its exporters'
``pod`` / ``namespace`` / ``container`` / ``hpc_job`` labels. This sync asks the server for
the cards' current series with one instant query per card metric family
(``read.promql.reads.accelerators_reported``: the same queries and ingestion mapping card
registration uses, so entity keys, hosts and attribution labels are exactly the store
path's), then feeds one observation per card into the same ``attribution_record``.

Intervals are therefore *sampled*: a holder is seen once per sync (``PROMQL_SYNC_SECONDS``,
beat's ``promql-source-sync``, plus every manual sync), and an interval's edges are precise to
one sync interval, not to the exporter's scrape interval. A holder seen at one sync only is
billed one sync step.

The same sync writes what the store path writes per card on ingestion (issue 31 §6): its
``last_seen`` (the newest sample time the server holds for it, asked with ``timestamp()``:
an instant query's own stamp is its evaluation time, so absence reads alike) and its
health (the derived health point), so cards, absence and alerts agree on both paths.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.db import transaction

from telemetry.catalogue.registry import accelerators_seen_by_entity, devices_register
from telemetry.families.exposition import MappedSample
from telemetry.ingest.attribution import Holder, Observation, attribution_record
from telemetry.ingest.health import accelerator_health_apply
from telemetry.models import PromQLDataSource
from telemetry.read.promql.reads import (
    accelerators_health_reported,
    accelerators_reported,
    devices_of,
)
from telemetry.read.promql.translate import entity_key


@dataclass(frozen=True)
class PromQLSyncResult:
    """What one sync did: cards the server named, cards held, and the interval changes."""

    cards: int
    held: int
    attribution: dict[str, int] = field(default_factory=dict)


def holders_of(samples: list[MappedSample]) -> dict[str, Holder]:
    """One holder per card key. Several series of one card name its holder; a held one wins
    over a free one (a family relabelled without the pod mapping must not free the card)."""
    out: dict[str, Holder] = {}
    for s in samples:
        holder = Holder.from_labels(s.attribution, host=s.entity.host)
        key = entity_key(s)
        if key not in out or (out[key].free and not holder.free):
            out[key] = holder
    return out


def _seen_and_health(
    ids: dict[str, int], samples: list[MappedSample], health: list[MappedSample]
) -> None:
    """``last_seen`` and health as the store path writes them (parity, issue 31 §6): a card is
    seen at its newest sample's time on the server (``samples`` carry it, see
    ``accelerators_reported``; not the sync's time: a stale series must not look fresh), and
    its health is the derived health point, MIG slices' onto their GPU. The health points are
    stamped with the query's time, so they never move ``last_seen``."""
    newest: dict[int, float] = {}
    for s in samples:
        card = ids.get(entity_key(s))
        if card is not None:
            newest[card] = max(newest.get(card, s.timestamp), s.timestamp)
    by_time: dict[float, set[int]] = {}
    for card, ts in newest.items():
        by_time.setdefault(ts, set()).add(card)
    for ts, cards in by_time.items():
        accelerators_seen_by_entity(
            cards, seen_at=datetime.fromtimestamp(ts, tz=UTC), min_gap_seconds=0
        )
    states: dict[int, tuple[float, int]] = {}
    slices: set[int] = set()
    for s in health:
        card = ids.get(entity_key(s))
        if card is None:
            continue
        if card not in states or s.timestamp >= states[card][0]:
            states[card] = (s.timestamp, int(s.value))
        if s.entity.parent_vendor_id:
            slices.add(card)
    accelerator_health_apply({card: value for card, (_, value) in states.items()}, slices=slices)


def promql_source_sync(*, source: PromQLDataSource, at: datetime | None = None) -> PromQLSyncResult:
    """Register the cards ``source`` reports and record their holders at ``at`` (now).

    All queries run before anything is written: a server that is down (or answers one query
    and not the next) raises ``DataSourceUnavailable``, which the reader records on the
    source as its last error, and nothing is written.
    """
    with _collector_paused():
        return _sync(source, at or datetime.now(tz=UTC))


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic collector paused while one sync builds and drops ~400,000 short-lived,
    acyclic objects (answer series, mapped samples, rows) at 102,400 cards: refcounting frees
    them all, and the collector's passes over the growing heap cost a third of the sync at
    10,240 cards (2.0 -> 1.3 s measured). Switched back on however the sync ends."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _sync(source: PromQLDataSource, at: datetime) -> PromQLSyncResult:
    samples = accelerators_reported(source, at=at)
    health = accelerators_health_reported(source, at=at)
    devices = devices_of(samples + health)
    holders = holders_of(samples)
    with transaction.atomic():
        ids = devices_register(source.cluster, devices.values()) if devices else {}
        _seen_and_health(ids, samples, health)
        counts = attribution_record(
            cluster_id=source.cluster_id,
            observations=[
                Observation(ids[key], at.timestamp(), holder)
                for key, holder in holders.items()
                if key in ids
            ],
            source=None,  # no sample source: nothing is stored from a PromQL server
        )
    return PromQLSyncResult(
        cards=len(devices),
        held=sum(1 for h in holders.values() if not h.free),
        attribution=counts,
    )
