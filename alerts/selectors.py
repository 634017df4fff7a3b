"""Reads of alerts for the triage page, its CSV export and the API.

Tenancy: staff (and operator-level tokens) see every alert; customers and tenant-bound tokens
see only alerts whose ``tenant`` is theirs — alerts on their workloads. Alerts on shared
infrastructure (cards, links, pools) carry no tenant and stay staff-only.
"""

from __future__ import annotations

from django.db.models import Case, IntegerField, QuerySet, Value, When

from accounts.selectors.scoping import scope_to_tenant
from alerts.models import Alert, Severity

# "open" is not a stored state: it means firing or acknowledged, what triage cares about.
STATE_FILTERS: tuple[str, ...] = ("open", *Alert.State.values)
SEVERITY_FILTERS: tuple[str, ...] = tuple(Severity.values)


def alerts_visible_to(user) -> QuerySet[Alert]:
    return scope_to_tenant(Alert.objects.all(), user)


def alerts_for_triage(
    alerts: QuerySet[Alert], *, state: str | None = None, severity: str | None = None
) -> QuerySet[Alert]:
    """``alerts`` filtered by state (incl. ``open``) and severity, open ones first.

    Within open and closed: critical before warning before info, newest ``last_seen`` first.
    Callers validate the filter values against ``STATE_FILTERS`` / ``SEVERITY_FILTERS``.
    """
    if state == "open":
        alerts = alerts.exclude(state=Alert.State.RESOLVED)
    elif state:
        alerts = alerts.filter(state=state)
    if severity:
        alerts = alerts.filter(severity=severity)
    return (
        alerts.select_related("rule", "entity__cluster", "tenant", "acknowledged_by", "resolved_by")
        .annotate(
            closed=Case(
                When(state=Alert.State.RESOLVED, then=Value(1)),
                default=Value(0),
                output_field=IntegerField(),
            ),
            severity_rank=Case(
                When(severity=Severity.CRITICAL, then=Value(0)),
                When(severity=Severity.WARNING, then=Value(1)),
                default=Value(2),
                output_field=IntegerField(),
            ),
        )
        .order_by("closed", "severity_rank", "-last_seen", "-id")
    )
