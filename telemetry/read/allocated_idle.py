"""Allocated but idle, per card, for the alert rule of that kind (``alerts``, which may not read
``scheduling``): the scheduler's allocation (open ``kind="scheduler"`` attribution intervals)
× measured utilization (:func:`telemetry.read.runs_under`, the rule the idle list and the
ledger's split use).

:func:`allocated_idle_values` answers, for every card an open scheduler interval holds, how
long its current run of readings under the threshold has lasted (0 when its newest reading is
busy), in seconds, clipped to the holding. A held card without a reading in the read window
has no value (no data is not idleness, and not recovery either); ``held`` names every held
card, so an alert on a card its job released can be resolved.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from telemetry.models import AttributionKind, Entity, MetricDefinition
from telemetry.read.local.holders import card_holdings
from telemetry.read.local.runs import SpanRuns

# The alert rule's pseudo-metric (as ``accelerator_absence_ratio`` is the absence rule's).
ALLOCATED_IDLE_METRIC = "accelerator_allocated_idle_seconds"
UTILIZATION = "accelerator_utilization_ratio"
# Readings older than this do not say what a card does now (ten one-minute scrapes).
STALE = timedelta(minutes=10)


@dataclass
class AllocatedIdle:
    """Current idle seconds per held card with data, ``(key, tenant id)`` labels of the held
    cards (the tenant is the holder's), and the held cards' entity ids."""

    values: dict[int, float] = field(default_factory=dict)
    labels: dict[int, tuple[str, int | None]] = field(default_factory=dict)
    held: set[int] = field(default_factory=set)


def allocated_idle_values(
    *, threshold: float, seconds: int, now: datetime, runs_under: Callable[..., list[SpanRuns]]
) -> AllocatedIdle:
    """See the module docstring. Reads ``seconds`` plus :data:`STALE` back, so a run that
    began before the window shows as at least the window long. ``runs_under`` is the read
    API's (``telemetry.read.runs_under``, which dispatches to PromQL sources)."""
    found = AllocatedIdle()
    metric = MetricDefinition.objects.filter(name=UTILIZATION).first()
    start = now - timedelta(seconds=seconds) - STALE
    holdings = [
        h
        for h in card_holdings(start=start, end=now, kind=AttributionKind.SCHEDULER)
        if h.open and h.until >= now - STALE
    ]
    if not holdings:
        return found
    entities = Entity.objects.in_bulk({h.entity_id for h in holdings})
    for h in holdings:
        found.held.add(h.entity_id)
        found.labels[h.entity_id] = (h.entity_key, h.tenant_id)
    if metric is None:
        return found
    spans = runs_under(
        metric=metric,
        spans=[(entities[h.entity_id], h.start) for h in holdings],
        end=now,
        threshold=threshold,
    )
    for holding, span in zip(holdings, spans, strict=True):
        if not span.measured:
            continue
        idle = 0.0
        last = span.runs[-1] if span.runs else None
        if last is not None and last.current:
            if last.end < now - STALE:
                continue  # idle readings that stopped coming: no data now, not recovery
            idle = (min(last.end, now) - max(last.start, holding.start)).total_seconds()
        # A card held by two open intervals (a hand-over) keeps its longer idle figure.
        found.values[holding.entity_id] = max(found.values.get(holding.entity_id, 0.0), idle)
    return found
