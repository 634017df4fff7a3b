"""Showback from the scheduler's allocations: card-hours per tenant × partition × node type,
per UTC day, from the synced jobs' start and end times and the cards they were granted.

A job counts from its start to its end (a running job up to ``now``), clipped to the period
asked; a job spanning midnight splits across the days it touched. Its cards per node come
from ``allocation`` (the granted GRES indices per node, so a two-node job with four GPUs on
each counts eight, each node with its own node type); a job whose allocation is gone (a
finished job slurmrestd no longer details) counts ``gpus + npus`` — already the total over
its nodes, whether asked with ``--gpus`` (per job) or ``--gres=gpu:N`` (per node, times the
nodes) — spread evenly over its nodes. A node's type is its inventory node's card model
(the inventory Node of the same cluster with that hostname), else ``unknown``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.selectors.scoping import scope_to_tenant
from inventory.models import Accelerator, Node
from scheduling.models import SchedulerJob

UNKNOWN_NODE_TYPE = "unknown"
CARD_NAMES = ("gpu", "npu")  # the GRES names counted as cards (as gpus/npus are)
_MONTH = re.compile(r"^(\d{4})-(\d{2})$")


class PeriodError(ValueError):
    """A period the showback cannot read (the message names what is wrong)."""


def month_period(text: str) -> tuple[datetime, datetime]:
    """``YYYY-MM`` → the month's ``[start, end)`` in UTC; raises :class:`PeriodError`."""
    found = _MONTH.match(text or "")
    if not found:
        raise PeriodError(
            _("month must be YYYY-MM (for example 2026-11), not %(value)r.") % {"value": text}
        )
    year, month = int(found[1]), int(found[2])
    if not 1 <= month <= 12 or year < 1970:
        raise PeriodError(_("month %(value)r is not a calendar month.") % {"value": text})
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
    return start, end


def this_month(now: datetime | None = None) -> str:
    return (now or timezone.now()).astimezone(UTC).strftime("%Y-%m")


@dataclass(frozen=True)
class AllocationRow:
    """Card-hours one tenant's jobs were allocated on one day (or month), cluster, partition
    and node type; ``jobs`` counts the jobs that contributed."""

    cluster: str
    tenant: str  # slug
    tenant_name: str
    partition: str
    node_type: str
    day: date | None  # None: the month's total
    card_seconds: float
    job_ids: frozenset[int] = field(default_factory=frozenset, repr=False, compare=False)

    @property
    def jobs(self) -> int:
        return len(self.job_ids)

    @property
    def card_hours(self) -> float:
        return self.card_seconds / 3600.0


def _cards_per_node(allocation: list, nodes: list, total: int) -> list[tuple[str, float]]:
    """(node, cards) for one job: the granted indices per node, else ``total`` spread over
    its nodes (one unnamed node when the scheduler named none)."""
    granted = []
    for entry in allocation or []:
        cards = sum(
            len(card.get("indices") or [])
            for card in entry.get("cards") or []
            if card.get("name") in CARD_NAMES
        )
        granted.append((str(entry.get("node") or ""), float(cards)))
    if granted and any(cards for _node, cards in granted):
        return granted
    if not total:
        return []
    names = [str(n) for n in nodes or []] or [""]
    return [(name, total / len(names)) for name in names]


def _day_slices(start: datetime, end: datetime) -> list[tuple[date, float]]:
    """Seconds of ``[start, end)`` on each UTC day it touches."""
    out = []
    at = start.astimezone(UTC)
    end = end.astimezone(UTC)
    while at < end:
        midnight = datetime.combine(at.date() + timedelta(days=1), datetime.min.time(), UTC)
        stop = min(midnight, end)
        out.append((at.date(), (stop - at).total_seconds()))
        at = stop
    return out


def node_types(pairs: set[tuple[int, str]]) -> dict[tuple[int, str], str]:
    """(cluster id, hostname) → the inventory node's card model name: the node's stated model,
    else its cards' most common one (model or reported name), else ``unknown``."""
    if not pairs:
        return {}
    clusters = {c for c, _h in pairs}
    hosts = {h for _c, h in pairs if h}
    found: dict[tuple[int, str], str] = {}
    rows = Node.objects.filter(cluster_id__in=clusters, hostname__in=hosts).values_list(
        "cluster_id", "hostname", "hardware_model__name"
    )
    for cluster_id, hostname, model in rows:
        if model:
            found[(cluster_id, hostname)] = model
    counts: dict[tuple[int, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    cards = Accelerator.objects.filter(
        node__cluster_id__in=clusters, node__hostname__in=hosts, parent__isnull=True
    ).values_list("node__cluster_id", "node__hostname", "hardware_model__name", "model_name")
    for cluster_id, hostname, model, reported in cards:
        if (cluster_id, hostname) not in found and (model or reported):
            counts[(cluster_id, hostname)][model or reported] += 1
    for key, by_model in counts.items():
        found[key] = max(sorted(by_model), key=lambda m: by_model[m])
    return {pair: found.get(pair, UNKNOWN_NODE_TYPE) for pair in pairs}


def allocation_by_day(
    user, start: datetime, end: datetime, *, now: datetime | None = None, cluster: str = ""
) -> list[AllocationRow]:
    """Card-hours allocated per cluster × tenant × partition × node type × UTC day over
    ``[start, end)``, for the jobs ``user`` may see (customers: their tenant's)."""
    now = now or timezone.now()
    end = min(end, now)
    if end <= start:
        return []
    jobs = SchedulerJob.objects.filter(start_time__lt=end).filter(
        Q(end_time__isnull=True) | Q(end_time__gt=start)
    )
    if cluster:
        jobs = jobs.filter(source__cluster__name=cluster)
    rows = scope_to_tenant(jobs, user, "tenant").values_list(
        "pk", "source__cluster_id", "source__cluster__name", "tenant__slug", "tenant__name",
        "partition", "allocation", "nodes", "gpus", "npus", "start_time", "end_time",
    )  # fmt: skip
    pieces = []
    for pk, cid, cname, slug, tname, part, alloc, nodes, gpus, npus, began, ended in rows:
        held = _cards_per_node(alloc, nodes, gpus + npus)
        if held:
            span = (max(began, start), min(ended or now, end))
            pieces.append((pk, cid, cname, slug, tname, part, held, span))
    types = node_types({(p[1], node) for p in pieces for node, _cards in p[6]})
    seconds: dict[tuple, float] = defaultdict(float)
    members: dict[tuple, set[int]] = defaultdict(set)
    for pk, cid, cname, slug, tname, part, held, (began, ended) in pieces:
        for day, length in _day_slices(began, ended):
            for node, cards in held:
                key = (cname, slug, tname, part, types[(cid, node)], day)
                seconds[key] += cards * length
                members[key].add(pk)
    return [
        AllocationRow(cluster=k[0], tenant=k[1], tenant_name=k[2], partition=k[3],
                      node_type=k[4], day=k[5], card_seconds=v, job_ids=frozenset(members[k]))
        for k, v in sorted(seconds.items())
    ]  # fmt: skip


def month_totals(rows: list[AllocationRow]) -> list[AllocationRow]:
    """The daily rows summed over the period (``day`` None); a job on several days counts
    once."""
    seconds: dict[tuple, float] = defaultdict(float)
    jobs: dict[tuple, set[int]] = defaultdict(set)
    for row in rows:
        key = (row.cluster, row.tenant, row.tenant_name, row.partition, row.node_type)
        seconds[key] += row.card_seconds
        jobs[key] |= row.job_ids
    return [
        AllocationRow(cluster=k[0], tenant=k[1], tenant_name=k[2], partition=k[3],
                      node_type=k[4], day=None, card_seconds=v, job_ids=frozenset(jobs[k]))
        for k, v in sorted(seconds.items())
    ]  # fmt: skip
