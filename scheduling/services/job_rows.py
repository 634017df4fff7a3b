"""Writing a sync's jobs: only the rows that are new or differ from what is stored.

On PostgreSQL (psycopg 3) the whole answer is COPYed into a temporary table and merged in one
``INSERT … ON CONFLICT (source, job_id) DO UPDATE … WHERE … IS DISTINCT FROM`` — the server
compares, and an unchanged job is neither sent back to Python nor rewritten. Elsewhere (SQLite,
the demo) the stored rows are read and compared here, and the new and changed ones written in
bulk statements. Both write the same rows with the same values, in the caller's transaction.
"""

from __future__ import annotations

import json
from datetime import datetime

from cluster_portal.web.copy_upsert import copy_available, copy_upsert
from scheduling.models import SchedulerJob, SchedulerSource

BATCH = 1000
# The job columns a sync compares and writes (in ``values_list`` order).
JOB_FIELDS = (
    "tenant_id", "name", "account", "user_name", "partition", "state", "state_reason", "nodes",
    "allocation", "gpus", "npus", "submit_time", "start_time", "end_time", "estimated_start",
)  # fmt: skip
JSON_FIELDS = frozenset({"nodes", "allocation"})


def jobs_write(*, source: SchedulerSource, wanted: dict[int, dict], now: datetime) -> int:
    """Store ``wanted`` (job id → the values of :data:`JOB_FIELDS`) for ``source``: new jobs
    created, changed ones updated, both with ``synced_at = now``; answer the rows written."""
    if not wanted:
        return 0
    if copy_available():
        return _write_copy(source, wanted, now)
    return _write_orm(source, wanted, now)


def _write_copy(source: SchedulerSource, wanted: dict[int, dict], now: datetime) -> int:
    dumps = json.dumps
    rows = (
        (
            source.pk,
            job_id,
            *(dumps(values[f]) if f in JSON_FIELDS else values[f] for f in JOB_FIELDS),
            now,
        )
        for job_id, values in wanted.items()
    )
    return copy_upsert(
        model=SchedulerJob,
        fields=("source", "job_id", *JOB_FIELDS, "synced_at"),
        rows=rows,
        conflict=("source", "job_id"),
        # synced_at last: it differs every sync, and is written only with a real change.
        update=JOB_FIELDS,
        also=("synced_at",),
    )


def _write_orm(source: SchedulerSource, wanted: dict[int, dict], now: datetime) -> int:
    existing = {
        row[0]: row[1:]
        for row in SchedulerJob.objects.filter(source=source).values_list(
            "job_id", "pk", *JOB_FIELDS
        )
    }
    created, updated = [], []
    for job_id, values in wanted.items():
        row = existing.get(job_id)
        if row is None:
            created.append(SchedulerJob(source=source, job_id=job_id, synced_at=now, **values))
        elif tuple(values[name] for name in JOB_FIELDS) != row[1:]:
            updated.append(
                SchedulerJob(pk=row[0], source=source, job_id=job_id, synced_at=now, **values)
            )
    SchedulerJob.objects.bulk_create(created, batch_size=BATCH)
    SchedulerJob.objects.bulk_update(updated, [*JOB_FIELDS, "synced_at"], batch_size=BATCH)
    return len(created) + len(updated)
