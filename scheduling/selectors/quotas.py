"""Each quota the schedulers state, beside the cards in use against it.

Use is the portal's own count of the cards held by the jobs it synced (running, suspended or
completing) in the quota's queue or account — the same jobs the attribution and showback
read — and, where the scheduler reports it, the scheduler's own count (Kueue counts admitted
workloads' requests, Volcano its queue's allocation): the two can differ (a workload admitted
whose pods have not started yet, a pod outside Kueue), and both are shown, never one for the
other. Customers see the quotas of their own tenant's accounts, and the queues their jobs ran
or wait in with their own use only: a shared queue's total use and its other tenants stay
the operator's.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.selectors.scoping import principal_sees_all
from scheduling.models import (
    JOB_HOLDING_STATES,
    SchedulerAccountMapping,
    SchedulerJob,
    SchedulerQuota,
)

# A queue counts as a customer's when its jobs ran or waited there this recently.
QUEUE_TENANCY_WINDOW = timedelta(days=7)


@dataclass
class QuotaUse:
    """One quota (``quota``: the stored row) beside its use as ``user`` may see it."""

    quota: SchedulerQuota
    cluster: str
    tenants: list[str] = field(default_factory=list)  # names; the operator's view only
    gpus_used: int = 0
    npus_used: int = 0
    gpus_pending: int = 0
    npus_pending: int = 0
    own_use_only: bool = False  # a customer's row of a queue: its own jobs, not the queue's

    @property
    def reported_gpus(self) -> int | None:
        return None if self.own_use_only else self.quota.reported_gpus

    @property
    def reported_npus(self) -> int | None:
        return None if self.own_use_only else self.quota.reported_npus

    @property
    def gpu_percent(self) -> float | None:
        return _percent(self.gpus_used, self.quota.gpus)

    @property
    def npu_percent(self) -> float | None:
        return _percent(self.npus_used, self.quota.npus)

    @property
    def lines(self) -> list[tuple]:
        """(card kind, quota, borrowable, in use, % of quota, scheduler's count, pending) for
        each card kind the quota limits or its jobs use."""
        quota = self.quota
        out = []
        if quota.gpus is not None or self.gpus_used or self.gpus_pending:
            out.append((_("GPUs"), quota.gpus, quota.gpus_borrowing_limit, self.gpus_used,
                        self.gpu_percent, self.reported_gpus, self.gpus_pending))  # fmt: skip
        if quota.npus is not None or self.npus_used or self.npus_pending:
            out.append((_("NPUs"), quota.npus, quota.npus_borrowing_limit, self.npus_used,
                        self.npu_percent, self.reported_npus, self.npus_pending))  # fmt: skip
        return out


def _percent(used: int, limit: int | None) -> float | None:
    if limit is None:
        return None
    return 100.0 * used / limit if limit else (0.0 if used == 0 else float("inf"))


def _scope_filter(quota: SchedulerQuota) -> Q:
    if quota.scope == SchedulerQuota.Scope.QUEUE:
        return Q(partition=quota.name)
    match = Q(account=quota.name)
    return match & Q(partition=quota.partition) if quota.partition else match


def quotas_beside_use(user, *, cluster: str = "", now: datetime | None = None) -> list[QuotaUse]:
    """The quotas ``user`` may see, each with the cards in use and pending against it."""
    now = now or timezone.now()
    staff = principal_sees_all(user)
    tenant_id = getattr(user, "tenant_id", None)
    if not staff and tenant_id is None:
        return []
    quotas = SchedulerQuota.objects.select_related("source__cluster").order_by(
        "source__cluster__name", "scope", "name", "partition"
    )
    if cluster:
        quotas = quotas.filter(source__cluster__name=cluster)
    mapped = defaultdict(dict)  # cluster id → account → (tenant id, tenant name)
    for cluster_id, account, tid, name in SchedulerAccountMapping.objects.values_list(
        "cluster_id", "account", "tenant_id", "tenant__name"
    ):
        mapped[cluster_id][account] = (tid, name)
    recent = Q(end_time__isnull=True) | Q(end_time__gte=now - QUEUE_TENANCY_WINDOW)
    out = []
    for quota in quotas:
        jobs = SchedulerJob.objects.filter(_scope_filter(quota), source_id=quota.source_id)
        own_use_only = False
        if quota.scope == SchedulerQuota.Scope.ACCOUNT:
            holder = mapped[quota.source.cluster_id].get(quota.name)
            if not staff and (holder is None or holder[0] != tenant_id):
                continue
            tenants = [holder[1]] if holder else []
        else:
            tenants = sorted(
                set(jobs.filter(recent).values_list("tenant__name", flat=True).distinct())
            )
            if not staff:
                if not jobs.filter(recent, tenant_id=tenant_id).exists():
                    continue
                jobs, own_use_only, tenants = jobs.filter(tenant_id=tenant_id), True, []
        row = QuotaUse(quota=quota, cluster=quota.source.cluster.name, tenants=tenants,
                       own_use_only=own_use_only)  # fmt: skip
        for state, gpus, npus in jobs.filter(
            Q(state__in=JOB_HOLDING_STATES) | Q(state="PENDING")
        ).values_list("state", "gpus", "npus"):
            if state == "PENDING":
                row.gpus_pending += gpus
                row.npus_pending += npus
            else:
                row.gpus_used += gpus
                row.npus_used += npus
        out.append(row)
    return out
