"""Who held which card when, read back for display: both kinds of attribution interval (the
scheduler's allocations and the exporters' labels) as spans, for the card page's swimlane and
the scheduler's allocated-but-idle list.

A span runs from the interval's start to its end (``ended_at``) or, still open, to one step
(a scrape, or a scheduler sync) after it was last confirmed — never past ``end``. Which kind
wins where both name a holder (README "Who holds which card") is :func:`holder_now`'s rule:
an open scheduler interval, else an open exporter interval.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q

from telemetry.models import AttributionInterval, AttributionKind
from telemetry.read.local.runs import SpanEntity

# Fields the page and the list need, so a 10,000-card cluster reads no whole rows.
_FIELDS = (
    "pk", "entity_id", "entity__key", "entity__accelerator_id", "entity__cluster_id",
    "entity__kind", "kind", "namespace", "pod",
    "hpc_job", "host", "tenant_id", "tenant__name", "started_at", "last_seen_at", "ended_at",
    "step_seconds",
)  # fmt: skip


@dataclass(frozen=True)
class CardHolding:
    """One interval clipped to the asked window. ``holder`` is what a person reads: the
    scheduler job id, dcgm-exporter's ``hpc_job``, or ``namespace/pod``."""

    entity_id: int
    entity_key: str
    accelerator_id: int | None
    kind: str
    holder: str
    job: str
    tenant_id: int | None
    tenant: str
    host: str
    start: datetime
    until: datetime
    open: bool
    entity_cluster_id: int | None = None
    entity_kind: str = ""

    @property
    def span_entity(self) -> SpanEntity:
        """The held card as :func:`telemetry.read.runs_under` reads it, from this row's own
        fields (no second read of the card)."""
        return SpanEntity(self.entity_id, self.entity_cluster_id, self.entity_kind,
                          self.entity_key)  # fmt: skip


def _holding(row: dict, start: datetime, end: datetime) -> CardHolding | None:
    step = row["step_seconds"] if row["step_seconds"] > 0 else settings.TELEMETRY_INTERVAL_SECONDS
    until = row["last_seen_at"] + timedelta(seconds=step)
    if row["ended_at"] is not None:
        until = row["ended_at"]
    lo, hi = max(row["started_at"], start), min(until, end)
    if hi <= lo:
        return None
    if row["kind"] == AttributionKind.SCHEDULER or row["hpc_job"]:
        holder = row["hpc_job"]
    else:
        holder = "/".join(p for p in (row["namespace"], row["pod"]) if p)
    return CardHolding(
        entity_id=row["entity_id"], entity_key=row["entity__key"],
        accelerator_id=row["entity__accelerator_id"], kind=row["kind"], holder=holder,
        job=row["hpc_job"], tenant_id=row["tenant_id"], tenant=row["tenant__name"] or "",
        host=row["host"], start=lo, until=hi, open=row["ended_at"] is None,
        entity_cluster_id=row["entity__cluster_id"], entity_kind=row["entity__kind"],
    )  # fmt: skip


def card_holdings(
    *,
    start: datetime,
    end: datetime,
    accelerator_ids: Iterable[int] | None = None,
    cluster_ids: Iterable[int] | None = None,
    kind: str | None = None,
    jobs: Iterable[str] | None = None,
) -> list[CardHolding]:
    """Intervals overlapping ``[start, end)`` of the given cards (or clusters), of one kind
    or both, optionally of some scheduler jobs only; oldest first per card."""
    # An open interval reaches at most one step past its last confirmation; a closed one ends
    # at ended_at. Both are covered by "seen after start minus the longest step".
    reach = max(settings.ATTRIBUTION_MAX_GAP_SECONDS, settings.SCHEDULER_SYNC_SECONDS) * 2
    rows = AttributionInterval.objects.filter(
        Q(started_at__lt=end),
        Q(ended_at__isnull=True, last_seen_at__gte=start - timedelta(seconds=reach))
        | Q(ended_at__gt=start),
    )
    if accelerator_ids is not None:
        rows = rows.filter(entity__accelerator_id__in=list(accelerator_ids))
    if cluster_ids is not None:
        rows = rows.filter(cluster_id__in=list(cluster_ids))
    if kind is not None:
        rows = rows.filter(kind=kind)
    if jobs is not None:
        rows = rows.filter(hpc_job__in=list(jobs))
    found = []
    for row in rows.order_by("entity_id", "started_at").values(*_FIELDS):
        holding = _holding(row, start, end)
        if holding is not None:
            found.append(holding)
    return found


def holder_now(holdings: Iterable[CardHolding], now: datetime) -> CardHolding | None:
    """Who holds a card at ``now`` (the end of the window ``holdings`` were read for), by
    the precedence rule: an open scheduler interval (the allocator's word), else an open
    exporter-label interval, else nobody. "Open" means not ended and confirmed within one
    step of ``now``."""
    current = [h for h in holdings if h.open and h.until >= now]
    for kind in (AttributionKind.SCHEDULER, AttributionKind.EXPORTER):
        of_kind = [h for h in current if h.kind == kind]
        if of_kind:
            return max(of_kind, key=lambda h: h.start)
    return None
