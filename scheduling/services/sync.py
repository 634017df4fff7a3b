"""One sync of a scheduler source: read everything first, then write it in one transaction.

The order matters for "nothing half-written, nothing lost": the API version, the jobs, the
nodes and the partitions are all fetched and normalised before anything is written; any
failure (down, slow, refused, garbage, HTTP 200 with ``errors[]``, no known API version) is
recorded as the source's last error and nothing else changes, so the next sync starts from the
same job watermark and catches up. Jobs whose account has no tenant mapping, or whose nodes
or cards do not parse, are refused (counted by reason on the source), never guessed.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from scheduling.errors import SchedulerSyncFailed
from scheduling.kubernetes import normalise as k8s_normalise
from scheduling.kubernetes.client import KubernetesClient
from scheduling.models import (
    KNOWN_SLURM_API_VERSIONS,
    SchedulerAccountMapping,
    SchedulerJob,
    SchedulerNode,
    SchedulerPartition,
    SchedulerQuota,
    SchedulerSource,
)
from scheduling.services.attribution import scheduler_attribution_sync
from scheduling.services.job_rows import jobs_write
from scheduling.slurm import v0_0_38
from scheduling.slurm.client import SchedulerError, SlurmClient
from scheduling.slurm.notation import NotationError

NORMALISERS = {"v0.0.38": v0_0_38}
assert set(NORMALISERS) == set(KNOWN_SLURM_API_VERSIONS)
# The next poll asks for changes since a little before this one started: Slurm compares
# whole seconds, and the portal's and the controller's clocks may differ by a little (keep
# them NTP-synced). A changed answer is the full list, so the overlap only re-reads.
WATERMARK_OVERLAP_SECONDS = 5
MAX_REFUSALS_KEPT = 20
# A Kubernetes answer is the whole list: a stored, unfinished pod missing from it was deleted
# (its end is not reported, so the sync that noticed is taken as its end).
VANISHED_STATE = "DELETED"
BATCH = 1000


@dataclass
class SyncResult:
    api_version: str
    jobs: int | None  # None: slurmrestd answered 304, nothing changed
    nodes: int
    partitions: int
    refused: dict = field(default_factory=dict)
    quotas: int = 0
    # Scheduler attribution intervals started / ended by this sync, and allocated cards not
    # attributed (by reason).
    intervals_started: int = 0
    intervals_ended: int = 0
    unattributed: dict = field(default_factory=dict)


def scheduler_source_sync(*, source: SchedulerSource, now: datetime | None = None) -> SyncResult:
    """Poll the source's jobs (incrementally), nodes and partitions and store them.
    Raises :class:`SchedulerSyncFailed` (recorded on the source) when it cannot be read."""
    now = now or timezone.now()
    if source.kind == SchedulerSource.Kind.KUBERNETES:
        return _kubernetes_sync(source, now)
    try:
        client = SlurmClient(
            base_url=source.base_url, user_name=source.user_name,
            token_env=source.token_env, timeout=source.timeout_seconds,
        )  # fmt: skip
        version = client.api_version(KNOWN_SLURM_API_VERSIONS)
        normaliser = NORMALISERS[version]
        started = int(time.time())
        params = {"update_time": source.jobs_update_time} if source.jobs_update_time else None
        jobs_answer = client.get(normaliser.JOBS, params)
        nodes_answer = client.get(normaliser.NODES)
        partitions_answer = client.get(normaliser.PARTITIONS)
        # Account quotas live in slurmdb: a slurmrestd without accounting does not serve it,
        # and then the source has no account quotas (not an error).
        offers_quotas = normaliser.ASSOCIATIONS in client.offered_paths
        quotas_answer = client.get(normaliser.ASSOCIATIONS) if offers_quotas else None
        jobs, refused_jobs = normaliser.jobs(jobs_answer) if jobs_answer is not None else (None, [])
        nodes = normaliser.nodes(nodes_answer)
        partitions = normaliser.partitions(partitions_answer)
        quotas = normaliser.quotas(quotas_answer) if offers_quotas else []
    except (SchedulerError, v0_0_38.AnswerError, NotationError) as exc:
        source.record_contact_error(str(exc), now=now)
        raise SchedulerSyncFailed(str(exc)) from None
    return _store(source, version, started, jobs, refused_jobs, nodes, partitions, quotas, now)


def _kubernetes_sync(source: SchedulerSource, now: datetime) -> SyncResult:
    """The same read-everything-then-store-once path for a Kubernetes API server."""
    try:
        client = KubernetesClient(
            base_url=source.base_url, token_env=source.token_env, timeout=source.timeout_seconds
        )
        started = int(time.time())
        answer = client.read()
        jobs, refused_jobs = k8s_normalise.jobs(answer)
        nodes = k8s_normalise.nodes(answer, jobs)
        partitions = k8s_normalise.partitions(answer, jobs)
        quotas = k8s_normalise.quotas(answer)
    except (SchedulerError, k8s_normalise.AnswerError) as exc:
        source.record_contact_error(str(exc), now=now)
        raise SchedulerSyncFailed(str(exc)) from None
    present = {job.job_id for job in jobs}
    return _store(source, answer.version, started, jobs, refused_jobs, nodes, partitions, quotas,
                  now, complete=present)  # fmt: skip


@transaction.atomic
def _store(
    source, version, started, jobs, refused_jobs, nodes, partitions, quotas, now,
    complete: set[int] | None = None,
) -> SyncResult:  # fmt: skip
    """Write one read. ``complete``: the ids of every job the scheduler still knows, when its
    answer is the whole list (Kubernetes); stored unfinished jobs outside it have vanished."""
    source = SchedulerSource.objects.select_for_update().get(pk=source.pk)
    refused = dict(source.last_refused) if jobs is None else {}
    stored = None
    if jobs is not None:
        tenants = dict(
            SchedulerAccountMapping.objects.filter(cluster_id=source.cluster_id).values_list(
                "account", "tenant_id"
            )
        )
        reasons: Counter = Counter(reason for _job, reason in refused_jobs)
        wanted: dict[int, dict] = {}
        for record in jobs:
            tenant_id = tenants.get(record.account)
            if tenant_id is None:
                reasons[
                    _("account %(account)r has no tenant mapping") % {"account": record.account}
                ] += 1
                continue
            wanted[record.job_id] = {
                "tenant_id": tenant_id, "name": record.name[:200], "account": record.account,
                "user_name": record.user_name, "partition": record.partition,
                "state": record.state, "state_reason": record.state_reason[:200],
                "nodes": record.nodes, "allocation": record.allocation, "gpus": record.gpus,
                "npus": record.npus, "submit_time": record.submit_time,
                "start_time": record.start_time, "end_time": record.end_time,
                "estimated_start": record.estimated_start,
            }  # fmt: skip
        stored = len(wanted)
        # Only what changed is written: a 20,000-job answer in which a hundred jobs moved
        # writes a hundred rows. ``synced_at`` is therefore when the sync last wrote the row
        # — the attribution reads this sync's ended jobs by it.
        jobs_write(source=source, wanted=wanted, now=now)
        if complete is not None:
            vanished = [
                pk
                for pk, job_id in SchedulerJob.objects.filter(
                    source=source, end_time__isnull=True
                ).values_list("pk", "job_id")
                if job_id not in complete
            ]
            SchedulerJob.objects.filter(pk__in=vanished).update(
                state=VANISHED_STATE, end_time=now, synced_at=now, estimated_start=None
            )
        refused = {reason: count for reason, count in reasons.most_common(MAX_REFUSALS_KEPT)}
        source.jobs_update_time = started - WATERMARK_OVERLAP_SECONDS
    _replace(SchedulerNode, source, {n.name: {"state": n.state, "gres": n.gres,
             "gres_used": n.gres_used, "partitions": n.partitions, "reason": n.reason[:500]}
             for n in nodes})  # fmt: skip
    _replace(SchedulerPartition, source, {p.name: {"state": p.state, "nodes": p.nodes}
             for p in partitions})  # fmt: skip
    _replace_quotas(source, quotas)
    # Every successful sync, a 304 included: the open intervals are extended to now (the jobs
    # still hold their cards) and the ended jobs' intervals closed, in the same transaction.
    attribution, unattributed = scheduler_attribution_sync(source=source, now=now)
    source.api_version, source.last_refused = version, refused
    source.last_unattributed = unattributed
    source.last_success_at, source.last_error, source.last_error_at = now, "", None
    source.save(update_fields=["api_version", "last_refused", "last_unattributed",
                               "jobs_update_time", "last_success_at", "last_error",
                               "last_error_at"])  # fmt: skip
    return SyncResult(
        api_version=version, jobs=stored, nodes=len(nodes), partitions=len(partitions),
        refused=refused, quotas=len(quotas), intervals_started=attribution.started,
        intervals_ended=attribution.ended, unattributed=unattributed,
    )  # fmt: skip


def _replace(model, source: SchedulerSource, wanted: dict[str, dict]) -> None:
    """Make the source's rows match ``wanted`` (name → values), writing only the rows that
    changed: new ones created, changed ones updated, the others deleted."""
    model.objects.filter(source=source).exclude(name__in=wanted).delete()
    rows = {row.name: row for row in model.objects.filter(source=source)}
    created, updated, fields = [], [], set()
    for name, values in wanted.items():
        row = rows.get(name)
        if row is None:
            created.append(model(source=source, name=name, **values))
            continue
        differ = [key for key, value in values.items() if getattr(row, key) != value]
        for key in differ:
            setattr(row, key, values[key])
        if differ:
            updated.append(row)
            fields.update(differ)
    model.objects.bulk_create(created, batch_size=BATCH)
    if updated:
        model.objects.bulk_update(updated, sorted(fields), batch_size=BATCH)


QUOTA_FIELDS = ("origin", "gpus", "npus", "gpus_borrowing_limit", "npus_borrowing_limit",
                "reported_gpus", "reported_npus")  # fmt: skip


def _replace_quotas(source: SchedulerSource, records) -> None:
    """The source's quotas as this read states them (few rows: a queue or account each):
    changed ones updated, new ones created, the ones no longer stated deleted."""
    wanted = {(r.scope, r.name, r.partition): r for r in records}
    for row in SchedulerQuota.objects.filter(source=source):
        record = wanted.pop((row.scope, row.name, row.partition), None)
        if record is None:
            row.delete()
            continue
        differ = [key for key in QUOTA_FIELDS if getattr(row, key) != getattr(record, key)]
        for key in differ:
            setattr(row, key, getattr(record, key))
        if differ:
            row.save(update_fields=differ)
    SchedulerQuota.objects.bulk_create(
        SchedulerQuota(source=source, scope=r.scope, name=r.name, partition=r.partition,
                       **{key: getattr(r, key) for key in QUOTA_FIELDS})
        for r in wanted.values()
    )  # fmt: skip
