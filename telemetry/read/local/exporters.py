"""Reads about exporter targets: which are due for a scrape, and what operators see of each."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from telemetry.models import ExporterTarget, IngestRefusal

# Beat checks every 5 s and the claim happens a moment after the check, so a 15 s target
# would drift to 20 s if "due" meant "at least 15 s ago" exactly. One second of slack keeps
# the cadence; it is far below the 5 s minimum interval, so two claims can never both win.
DUE_SLACK_SECONDS = 1.0


def due_before(*, interval_seconds: int, now: datetime) -> datetime:
    """A target whose last attempt is at or before this moment is due again."""
    return now - timedelta(seconds=interval_seconds - DUE_SLACK_SECONDS)


def exporter_targets_due(*, now: datetime | None = None) -> list[int]:
    """Ids of enabled targets never attempted or last attempted at least one interval ago,
    and not being scraped right now (a stuck scrape is not joined by another each interval)."""
    now = now or timezone.now()
    # Targets number in the tens or hundreds; comparing per-row intervals in Python keeps the
    # query portable (duration arithmetic differs between SQLite and PostgreSQL).
    rows = ExporterTarget.objects.filter(enabled=True).values_list(
        "id", "last_attempt_at", "interval_seconds", "scrape_lease_until"
    )
    return [
        target_id
        for target_id, last_attempt, interval, lease in rows
        if (lease is None or lease <= now)
        and (last_attempt is None or last_attempt <= due_before(interval_seconds=interval, now=now))
    ]


@dataclass(frozen=True)
class ExporterTargetRow:
    """One line of the operator page."""

    target: ExporterTarget
    state: str  # "ok", "failing", "never" (never scraped) or "disabled"
    success_age_seconds: float | None
    error_age_seconds: float | None
    dropped_total: int | None
    dropped_detail: str


def _state(target: ExporterTarget) -> str:
    if not target.enabled:
        return "disabled"
    if target.consecutive_failures > 0:
        return "failing"
    if target.last_success_at is None:
        return "never"
    return "ok"


def _age(moment: datetime | None, now: datetime) -> float | None:
    return None if moment is None else max(0.0, (now - moment).total_seconds())


def exporter_target_rows(*, now: datetime | None = None) -> list[ExporterTargetRow]:
    """Every target with its state and the ages operators read at a glance."""
    now = now or timezone.now()
    targets = ExporterTarget.objects.select_related("cluster").order_by("cluster__name", "name")
    rows = []
    for target in targets:
        dropped = (target.last_counts or {}).get("dropped")
        dropped = dropped if isinstance(dropped, dict) else None
        rows.append(
            ExporterTargetRow(
                target=target,
                state=_state(target),
                success_age_seconds=_age(target.last_success_at, now),
                error_age_seconds=_age(target.last_error_at, now),
                dropped_total=sum(dropped.values()) if dropped is not None else None,
                dropped_detail=", ".join(f"{k}: {v}" for k, v in sorted((dropped or {}).items())),
            )
        )
    return rows


@dataclass(frozen=True)
class RefusalSummary:
    """Refused pushes for the exporters page: every counter, and the newest refusal."""

    rows: list
    last: object | None


def ingest_refusal_summary() -> RefusalSummary:
    """Counters per cluster, path, reason and unit (``IngestRefusal``), newest first."""
    rows = list(IngestRefusal.objects.order_by("-last_at", "cluster_name", "reason"))
    return RefusalSummary(rows=rows, last=rows[0] if rows else None)
