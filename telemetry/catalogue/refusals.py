"""Counting refused pushes per cluster, path and reason (issue 22 part 9).

One upsert per refused request — ``INSERT … ON CONFLICT DO UPDATE SET count = count + n`` — so
concurrent gunicorn workers add to the same row without a lost update and a push with nothing
refused costs no query. Called *outside* the ingestion transaction (a refused push rolls its
own writes back, not its refusal count).
"""

from __future__ import annotations

from django.db import connection
from django.utils import timezone

from inventory.models import Cluster
from telemetry.catalogue.limits import text_problem
from telemetry.errors import IngestionError
from telemetry.families.identity import refusal_of
from telemetry.models import IngestRefusal


def refusals_record(
    *,
    cluster_name: str,
    path: str,
    counts: dict[str, int],
    unit: str = IngestRefusal.Unit.SAMPLES,
    message: str = "",
) -> None:
    """Add ``counts`` (reason → n; reasons outside the enumeration count as
    ``invalid_body``, filtered no-value reasons are ignored) to the cluster's counters."""
    merged: dict[str, int] = {}
    for reason, n in counts.items():
        refusal = refusal_of(reason)
        if refusal is not None and n > 0:
            merged[refusal] = merged.get(refusal, 0) + n
    if not merged:
        return
    # A name the ingestion refused (NUL or control characters, too long) is not looked up:
    # PostgreSQL cannot even compare text holding NUL. It counts under the unknown cluster.
    usable = bool(cluster_name) and text_problem(cluster_name, max_chars=200) is None
    known = Cluster.objects.filter(name=cluster_name).exists() if usable else False
    scope = cluster_name if known else ""
    if not known and cluster_name:
        message = message or f"unknown cluster {ascii(cluster_name[:60])}"
    message = message.replace("\x00", "\\x00")  # never store NUL (PostgreSQL refuses it)
    now = timezone.now()
    table = connection.ops.quote_name(IngestRefusal._meta.db_table)
    values = ", ".join(["(%s, %s, %s, %s, %s, %s, %s)"] * len(merged))
    params: list = []
    for reason, n in sorted(merged.items()):
        params += [scope, path, reason, unit, n, now, message[:500]]
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (cluster_name, path, reason, unit, count, last_at, last_message)"
            f" VALUES {values} ON CONFLICT (cluster_name, path, reason, unit) DO UPDATE SET"
            f" count = {table}.count + EXCLUDED.count, last_at = EXCLUDED.last_at,"
            " last_message = EXCLUDED.last_message",
            params,
        )


def refusal_record_error(*, cluster_name: str, path: str, error: IngestionError) -> None:
    """A request refused whole (a 4xx): one request under the error's reason."""
    refusals_record(
        cluster_name=cluster_name,
        path=path,
        counts={error.reason: 1},
        unit=IngestRefusal.Unit.REQUESTS,
        message=error.message,
    )


def refusals_record_reply(*, cluster_name: str, path: str, reply: dict) -> None:
    """The samples a stored push refused (its reply's ``refused``), if any."""
    refused = reply.get("refused") or {}
    if refused:
        reasons = ", ".join(f"{k}: {v}" for k, v in sorted(refused.items()))
        refusals_record(
            cluster_name=cluster_name, path=path, counts=refused, message=f"refused {reasons}"
        )
