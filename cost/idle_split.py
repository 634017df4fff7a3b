"""Allocated idle: the card-seconds a scheduler job held while its cards read idle, per holder
tenant, for the ledger's split of idle cost (:func:`cost.ledger.split_idle`).

A card counts as idle where its ``accelerator_utilization_ratio`` reads under
``SCHEDULER_IDLE_UTILIZATION_PERCENT`` (every reading of the run: bucket maxima, holes end a
run — ``telemetry.read.runs_under``, the rule the allocated-but-idle list uses). The ledger
counts every such card-second, with no minimum duration: the list and the alert rule use
``SCHEDULER_IDLE_MINUTES`` to decide what is worth showing, while money is split to the
second the data allows, so an hour's split is final when the hour closes. Intervals whose
job has no tenant mapping name no holder; their idle stays unallocated.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings

from accounts.models import Tenant
from inventory.models import Cluster
from telemetry.models import AttributionKind
from telemetry.read import (
    LocalBackend,
    backend_for,
    card_holdings,
    metrics_by_name,
    runs_under,
    span_entities,
)

UTILIZATION = "accelerator_utilization_ratio"


def idle_held_seconds(cluster: Cluster, start: datetime, end: datetime) -> dict[int, float]:
    """``{tenant id: card-seconds held idle}`` over ``[start, end)`` (scheduler intervals)."""
    holdings = [
        h
        for h in card_holdings(
            start=start, end=end, cluster_ids=[cluster.pk], kind=AttributionKind.SCHEDULER
        )
        if h.tenant_id is not None
    ]
    metric = metrics_by_name([UTILIZATION]).get(UTILIZATION)
    if not holdings or metric is None:
        return {}
    # The held cards as plain values (no model rows), but for a PromQL-read cluster.
    whole = () if isinstance(backend_for(cluster), LocalBackend) else (cluster.pk,)
    entities = span_entities(
        {h.entity_id for h in holdings}, whole, known=(h.span_entity for h in holdings)
    )
    spans = runs_under(
        metric=metric,
        spans=[(entities[h.entity_id], h.start) for h in holdings],
        end=end,
        threshold=settings.SCHEDULER_IDLE_UTILIZATION_PERCENT / 100.0,
    )
    found: dict[int, float] = {}
    for holding, span in zip(holdings, spans, strict=True):
        for run in span.runs:
            lo, hi = max(run.start, holding.start, start), min(run.end, holding.until, end)
            if hi > lo:
                found[holding.tenant_id] = (
                    found.get(holding.tenant_id, 0.0) + (hi - lo).total_seconds()
                )
    return found


@dataclass(frozen=True)
class IdleHolder:
    """One holder tenant's allocated idle over a cluster's ledger window (for the page)."""

    cluster: str
    currency: str
    tenant: str
    card_hours: float
    cents: int


def idle_holders(costs: Iterable) -> list[IdleHolder]:
    """Every cluster's allocated idle per holder tenant, most cents first (one query)."""
    ledgers = [(c.cluster.name, c.ledger) for c in costs if c.ledger is not None]
    ids = {pk for _name, ledger in ledgers for pk in ledger.idle_held}
    names = dict(Tenant.objects.filter(pk__in=ids).values_list("pk", "name")) if ids else {}
    rows = [
        IdleHolder(name, ledger.currency, names.get(pk, ""), seconds / 3600.0, cents)
        for name, ledger in ledgers
        for pk, (seconds, cents) in ledger.idle_held.items()
        if cents or seconds
    ]
    return sorted(rows, key=lambda r: (r.cluster, -r.cents, r.tenant))
