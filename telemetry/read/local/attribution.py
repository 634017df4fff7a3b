"""Attribution intervals read back: which workload held which card for how many seconds.

A workload binds to intervals by its label selector (``inventory.label_selectors``). An
interval matched by no selector is *unbound* (someone holds the card, no workload claims it);
one matched by several is *ambiguous* and billed to none of them — both are counted so a
page can say so instead of guessing. An interval covers its first observation to one scrape
step after its last, never past the moment the card was next seen free or with another
holder (``ended_at``); overlapping intervals of one card and workload (two ingest workers
racing) are merged first, so nothing is billed twice. MIG slices count their share of a GPU.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
from django.conf import settings
from django.db.models import Q

from inventory.label_selectors import Matcher, SelectorError, parse_selector, selector_matches
from telemetry.models import AttributionInterval, AttributionKind, Entity

HOUR = 3600.0
# A MIG profile such as "3g.40gb" holds 3 of the GPU's 7 compute slices (A100 / H100).
_MIG_PROFILE = re.compile(r"^(\d+)g\.")
_MIG_SLICES = 7.0


@dataclass(frozen=True)
class HeldByHour:
    """Card-seconds per hour (rows: ``hours``, unix hour starts) per binding (columns: ``keys``)."""

    hours: list[float]
    keys: list[Hashable]
    card_seconds: np.ndarray
    unbound_card_seconds: float = 0.0
    ambiguous_intervals: int = 0
    intervals: int = 0

    def for_hour(self, hour: float) -> np.ndarray | None:
        try:
            return self.card_seconds[self.hours.index(hour)]
        except ValueError:
            return None


@dataclass
class BoundInterval:
    """One interval as the workload page lists it."""

    entity_key: str
    namespace: str
    pod: str
    container: str
    hpc_job: str
    host: str
    started_at: datetime
    last_seen_at: datetime
    ended_at: datetime | None
    card_seconds: float
    weight: float = 1.0


def _matchers(bindings: Sequence[tuple[Hashable, str]]) -> list[tuple[int, tuple[Matcher, ...]]]:
    parsed = []
    for column, (_key, text) in enumerate(bindings):
        if not text:
            continue
        try:
            parsed.append((column, parse_selector(text)))
        except SelectorError:
            continue  # the model refuses these; an old row is simply not bound
    return parsed


def _span(row: AttributionInterval, start: float, end: float) -> tuple[float, float]:
    step = row.step_seconds if row.step_seconds > 0 else float(settings.TELEMETRY_INTERVAL_SECONDS)
    until = row.last_seen_at.timestamp() + step
    if row.ended_at is not None:
        until = min(until, row.ended_at.timestamp())
    return max(row.started_at.timestamp(), start), min(until, end)


def _weights(entity_ids: set[int]) -> dict[int, float]:
    """A MIG slice's share of its GPU from its profile (``3g.40gb`` → 3/7); a card is 1."""
    weights = {}
    rows = Entity.objects.filter(pk__in=entity_ids).values_list("pk", "accelerator__mig_profile")
    for pk, profile in rows:
        found = _MIG_PROFILE.match(profile or "")
        weights[pk] = min(1.0, int(found.group(1)) / _MIG_SLICES) if found else 1.0
    return weights


def _merged(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for lo, hi in sorted(spans):
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return merged


def _overlapping(cluster_id: int, start: float, end: float):
    # An interval reaches at most one gap past its last observation.
    window_start = datetime.fromtimestamp(start - settings.ATTRIBUTION_MAX_GAP_SECONDS, tz=UTC)
    window_end = datetime.fromtimestamp(end, tz=UTC)
    # Exporter-label intervals only: the cost ledger and workload pages bill and list these.
    # The scheduler's intervals of the same cards are the allocation view (card page, idle
    # list); billing them too would count a card twice (README "Who holds which card").
    return AttributionInterval.objects.filter(
        Q(cluster_id=cluster_id),
        Q(kind=AttributionKind.EXPORTER),
        Q(last_seen_at__gte=window_start),
        Q(started_at__lt=window_end),
    )


def held_by_hour(
    *,
    cluster_id: int,
    bindings: Sequence[tuple[Hashable, str]],
    start: datetime,
    end: datetime,
) -> HeldByHour:
    """Card-seconds each binding (``(key, selector)``) held per hour of ``[start, end)``."""
    lo, hi = start.timestamp(), end.timestamp()
    keys = [key for key, _ in bindings]
    matchers = _matchers(bindings)
    rows = list(_overlapping(cluster_id, lo, hi))
    weights = _weights({r.entity_id for r in rows})
    spans: dict[tuple[int, int], list[tuple[float, float]]] = defaultdict(list)
    unbound = 0.0
    ambiguous = 0
    for row in rows:
        a, b = _span(row, lo, hi)
        if b <= a:
            continue
        labels = row.holder_labels()
        hits = [column for column, m in matchers if selector_matches(m, labels)]
        if len(hits) == 1:
            spans[(hits[0], row.entity_id)].append((a, b))
        elif hits:
            ambiguous += 1
        else:
            unbound += (b - a) * weights.get(row.entity_id, 1.0)
    first_hour = np.floor(lo / HOUR) * HOUR
    hours = [float(h) for h in np.arange(first_hour, hi, HOUR)]
    matrix = np.zeros((len(hours), len(keys)), np.float64)
    for (column, entity_id), pieces in spans.items():
        weight = weights.get(entity_id, 1.0)
        for a, b in _merged(pieces):
            hour = np.floor(a / HOUR) * HOUR
            while hour < b:
                overlap = min(b, hour + HOUR) - max(a, hour)
                if overlap > 0:
                    matrix[int((hour - first_hour) // HOUR), column] += overlap * weight
                hour += HOUR
    return HeldByHour(
        hours=hours,
        keys=keys,
        card_seconds=matrix,
        unbound_card_seconds=unbound,
        ambiguous_intervals=ambiguous,
        intervals=len(rows),
    )


def bound_intervals(
    *, cluster_id: int, selector: str, start: datetime, end: datetime, limit: int = 50
) -> tuple[list[BoundInterval], int]:
    """The intervals ``selector`` binds in the window (newest first, at most ``limit``) and
    how many there are in all: what a workload page shows as "what bound"."""
    try:
        matchers = parse_selector(selector)
    except SelectorError:
        return [], 0
    lo, hi = start.timestamp(), end.timestamp()
    rows = list(_overlapping(cluster_id, lo, hi).select_related("entity"))
    weights = _weights({r.entity_id for r in rows})
    found = []
    for row in rows:
        if not selector_matches(matchers, row.holder_labels()):
            continue
        a, b = _span(row, lo, hi)
        weight = weights.get(row.entity_id, 1.0)
        found.append(
            BoundInterval(
                entity_key=row.entity.key,
                namespace=row.namespace,
                pod=row.pod,
                container=row.container,
                hpc_job=row.hpc_job,
                host=row.host,
                started_at=row.started_at,
                last_seen_at=row.last_seen_at,
                ended_at=row.ended_at,
                card_seconds=max(0.0, b - a) * weight,
                weight=weight,
            )
        )
    found.sort(key=lambda item: item.last_seen_at, reverse=True)
    return found[:limit], len(found)


class RecordedAttribution:
    """The attribution reads of a :class:`telemetry.read.backend.ReadBackend` whose cards'
    holders are recorded as intervals — by the store path and by the PromQL sync alike."""

    cluster_id: int | None

    def attribution_held_by_hour(
        self, *, bindings: Sequence[tuple[Hashable, str]], start: datetime, end: datetime
    ) -> HeldByHour:
        return held_by_hour(cluster_id=self.cluster_id, bindings=bindings, start=start, end=end)

    def attribution_bound_intervals(
        self, *, selector: str, start: datetime, end: datetime, limit: int
    ) -> tuple[list[BoundInterval], int]:
        return bound_intervals(
            cluster_id=self.cluster_id, selector=selector, start=start, end=end, limit=limit
        )
