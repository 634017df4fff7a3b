"""Sync a PromQL data source: register the cards its server reports and record who holds them.

A cluster read through a PromQL source stores no samples, so the store path's attribution
(``telemetry.ingest.prometheus`` feeding ``ingest.attribution``) never sees its exporters'
``pod`` / ``namespace`` / ``container`` / ``hpc_job`` labels. This sync asks the server for
the cards' current series with one instant query per card metric family
(``read.promql.reads.accelerators_reported``: the same queries and ingestion mapping card
registration uses, so entity keys, hosts and attribution labels are exactly the store
path's), then feeds one observation per card into the same ``attribution_record``.

Intervals are therefore *sampled*: a holder is seen once per sync (``PROMQL_SYNC_SECONDS``,
beat's ``promql-source-sync``, plus every manual sync), and an interval's edges are precise to
one sync interval, not to the exporter's scrape interval. A holder seen at one sync only is
billed one sync step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.db import transaction

from telemetry.ingest.attribution import Holder, Observation, attribution_record
from telemetry.ingest.exposition import MappedSample
from telemetry.ingest.registry import devices_register
from telemetry.models import PromQLDataSource
from telemetry.read.promql.reads import accelerators_reported, devices_of
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


def promql_source_sync(*, source: PromQLDataSource, at: datetime | None = None) -> PromQLSyncResult:
    """Register the cards ``source`` reports and record their holders at ``at`` (now).

    All queries run before anything is written: a server that is down (or answers one query
    and not the next) raises ``DataSourceUnavailable``, which the reader records on the
    source as its last error, and nothing is written.
    """
    at = at or datetime.now(tz=UTC)
    samples = accelerators_reported(source, at=at)
    devices = devices_of(samples)
    holders = holders_of(samples)
    with transaction.atomic():
        ids = devices_register(source.cluster, devices.values()) if devices else {}
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
