"""Evaluating alert rules against the telemetry store (run by the ``monitoring.evaluate_alerts``
beat task).

For each enabled rule, the rule's metric is aggregated per entity of the rule's kind over the
window ending at ``now`` (``telemetry.read.window_values``: minute rollups for
``mean``/``max``/``min``, the newest raw value for ``last``, from rows and from the twin's
dense frames alike).

Then, per entity:

- condition holds, no open alert → open one (FIRING, first_seen = last_seen = now);
- condition holds, an open (firing or acknowledged) alert exists → refresh its ``last_seen``,
  ``value`` and message; an acknowledged alert stays acknowledged;
- condition does not hold and the entity had data → resolve its open alert (RESOLVED,
  ``resolved_at`` = now, ``resolved_by`` None: resolved by the evaluator, not a person);
- an **allocated-but-idle** rule (``accelerator_allocated_idle_seconds``) reads the
  scheduler's open allocations × utilization (``telemetry.read.allocated_idle_values``): it
  fires on a held card that has read under the threshold for at least the rule's window,
  resolves when the card reads busy again or its job releases it;
- the ``accelerator-absent`` rule reads no samples: its value is computed from each card's
  ``last_seen`` (``telemetry.read.absence_window``), so a card that stops reporting fires it;
- **no data in the window** (no rollup bucket / raw value for the entity) → nothing changes:
  an open alert stays open with its old ``last_seen``, and no alert is opened. Missing data is
  not evidence of recovery (a dead exporter would otherwise "resolve" every alert of its
  hosts); staleness has its own rules (``exporter-scrape-failing``, ``twin-tick-lag``) and
  the page shows how old ``last_seen`` is.

A rule whose metric is not in the catalogue yet (e.g. no source has written it) is skipped.

Cost: a constant number of queries per rule, whatever the number of entities: the grouped
reads (see ``readings``), one read of the rule's open alerts, keys of newly firing frame
entities, one bulk insert, one bulk refresh (a single ``UPDATE … FROM`` a JSON recordset) and
one bulk resolve.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from alerts.models import Alert, AlertRule, alert_message
from telemetry.models import MetricDefinition
from telemetry.read import (
    ABSENCE_METRIC,
    ALLOCATED_IDLE_METRIC,
    absence_window,
    allocated_idle_values,
    entity_labels,
    window_values,
)

OPEN_STATES = (Alert.State.FIRING, Alert.State.ACKNOWLEDGED)
# Bounds the size of one ``IN (...)`` list when resolving; normally one chunk is enough.
RESOLVE_CHUNK = 5000

COMPARATORS: dict[str, Callable[[float, float], bool]] = {
    AlertRule.Comparator.GT: operator.gt,
    AlertRule.Comparator.GE: operator.ge,
    AlertRule.Comparator.LT: operator.lt,
    AlertRule.Comparator.LE: operator.le,
}


@dataclass
class RuleOutcome:
    opened: int = 0
    refreshed: int = 0
    resolved: int = 0


@dataclass
class EvaluationTotals:
    rules: int = 0
    opened: int = 0
    refreshed: int = 0
    resolved: int = 0
    skipped: list[str] = field(default_factory=list)


def alerts_evaluate(*, now: datetime | None = None) -> dict:
    """Evaluate every enabled rule at ``now`` (default: the current time); see module doc.

    Returns counts for the task result and logs: rules evaluated, alerts opened, refreshed
    and resolved, and the names of rules skipped because their metric is unknown.
    """
    now = now or timezone.now()
    if timezone.is_naive(now):
        raise ValueError("now must be timezone-aware")
    rules = list(AlertRule.objects.filter(enabled=True))
    metrics = {
        m.name: m for m in MetricDefinition.objects.filter(name__in={r.metric for r in rules})
    }
    totals = EvaluationTotals()
    for rule in rules:
        metric = metrics.get(rule.metric)
        if metric is None and rule.metric in (ABSENCE_METRIC, ALLOCATED_IDLE_METRIC):
            metric = MetricDefinition(name=rule.metric, entity_kind=rule.entity_kind)
        if metric is None:
            totals.skipped.append(rule.name)
            continue
        outcome = _evaluate_rule(rule=rule, metric=metric, now=now)
        totals.rules += 1
        totals.opened += outcome.opened
        totals.refreshed += outcome.refreshed
        totals.resolved += outcome.resolved
    return {
        "evaluated_at": now.isoformat(),
        "rules": totals.rules,
        "opened": totals.opened,
        "refreshed": totals.refreshed,
        "resolved": totals.resolved,
        "skipped": totals.skipped,
    }


# One transaction per rule: a rule's alerts change together, and a slow rule does not hold
# row locks on every other rule's alerts. Every step is idempotent, so a crash between rules
# only leaves later rules for the next run.
@transaction.atomic
def _evaluate_rule(*, rule: AlertRule, metric: MetricDefinition, now: datetime) -> RuleOutcome:
    released: set[int] | None = None
    if rule.metric == ABSENCE_METRIC:  # from inventory's last_seen, not from samples
        window = absence_window(now=now)
    elif rule.metric == ALLOCATED_IDLE_METRIC:  # allocation × utilization, not one metric
        window = allocated_idle_values(
            threshold=rule.threshold, seconds=rule.window_seconds, now=now
        )
        released = window.held
    else:
        window = window_values(rule=rule, metric=metric, now=now)
    if released is not None:
        # Value: seconds the held card has read under the threshold; the rule's duration.
        firing = {eid: v for eid, v in window.values.items() if v >= rule.window_seconds}
    else:
        holds = COMPARATORS[rule.comparator]
        firing = {eid: v for eid, v in window.values.items() if holds(v, rule.threshold)}
    labels = window.labels
    missing = firing.keys() - labels.keys()
    if missing:  # entities read from frames: look up keys and tenants of the firing ones only
        labels.update(entity_labels(missing))
    open_alerts = _open_alert_ids(rule)

    new = [
        Alert(
            rule=rule,
            entity_id=entity_id,
            tenant_id=labels[entity_id][1],
            severity=rule.severity,
            state=Alert.State.FIRING,
            value=value,
            message=alert_message(rule, labels[entity_id][0], value),
            first_seen=now,
            last_seen=now,
        )
        for entity_id, value in firing.items()
        if entity_id not in open_alerts
    ]
    taken = _insert(rule, new)
    open_alerts.update(taken)
    created = {a.entity_id for a in new} - taken.keys()

    refresh = [
        (open_alerts[eid], value, alert_message(rule, labels[eid][0], value))
        for eid, value in firing.items()
        if eid in open_alerts and eid not in created
    ]
    _refresh(refresh, now)

    recovered = [
        aid
        for eid, aid in open_alerts.items()
        if (eid in window.values and eid not in firing)
        # an allocated-but-idle card its job released is no longer allocated
        or (released is not None and eid not in released)
    ]
    resolved = 0
    for i in range(0, len(recovered), RESOLVE_CHUNK):
        # The state filter keeps an alert an operator resolved meanwhile as they left it.
        resolved += Alert.objects.filter(
            pk__in=recovered[i : i + RESOLVE_CHUNK], state__in=OPEN_STATES
        ).update(state=Alert.State.RESOLVED, resolved_at=now, resolved_by=None)
    return RuleOutcome(
        opened=len(created),
        refreshed=len(refresh),
        resolved=resolved,
    )


def _open_alert_ids(rule: AlertRule) -> dict[int, int]:
    """``{entity_id: alert_id}`` of the rule's open alerts."""
    return dict(
        Alert.objects.filter(rule=rule, state__in=OPEN_STATES).values_list("entity_id", "id")
    )


def _insert(rule: AlertRule, new: list[Alert]) -> dict[int, int]:
    """Insert ``new``; return ``{entity_id: alert_id}`` of open alerts someone else created.

    Two evaluations may race (a slow run overlapping the next beat, two beats). Between our
    read of the open alerts and this insert, the other may have opened an alert for the same
    (rule, entity): the partial unique constraint then raises IntegrityError. We roll back to
    the savepoint, re-read the open alerts, insert only the rest, and the caller refreshes the
    colliding ones instead — so a race never duplicates an alert and never fails the run.
    """
    if not new:
        return {}
    try:
        with transaction.atomic():  # savepoint: the collision must not abort the rule's work
            Alert.objects.bulk_create(new)
        return {}
    except IntegrityError:
        taken = _open_alert_ids(rule)
        rest = [alert for alert in new if alert.entity_id not in taken]
        # A third evaluation racing here too leaves its own alert, computed from the same data.
        Alert.objects.bulk_create(rest, ignore_conflicts=True)
        return {
            alert.entity_id: taken[alert.entity_id] for alert in new if alert.entity_id in taken
        }


# Both set each alert's new value and message from one JSON parameter: a single statement,
# linear in the number of alerts (Django's bulk_update writes a CASE WHEN per row, quadratic
# at 10,000 alerts and split into hundreds of statements on SQLite).
_PG_REFRESH = """
UPDATE {table} AS a
SET value = v.value, message = v.message, last_seen = %s
FROM jsonb_to_recordset(%s::jsonb) AS v(id bigint, value double precision, message text)
WHERE a.id = v.id AND a.state <> %s
"""
_SQLITE_REFRESH = """
UPDATE {table}
SET value = v.value, message = v.message, last_seen = %s
FROM (
    SELECT json_extract(j.value, '$.id') AS id, json_extract(j.value, '$.value') AS value,
           json_extract(j.value, '$.message') AS message
    FROM json_each(%s) AS j
) AS v
WHERE {table}.id = v.id AND {table}.state <> %s
"""


def _refresh_statement() -> str | None:
    if connection.vendor == "postgresql":
        return _PG_REFRESH
    if connection.vendor == "sqlite" and connection.Database.sqlite_version_info >= (3, 33):
        return _SQLITE_REFRESH  # UPDATE … FROM needs SQLite 3.33
    return None


def _refresh(rows: list[tuple[int, float, str]], now: datetime) -> None:
    """Set ``last_seen = now`` and each alert's new value and message."""
    if not rows:
        return
    statement = _refresh_statement()
    if statement is None:
        Alert.objects.bulk_update(
            [Alert(pk=i, value=v, message=m, last_seen=now) for i, v, m in rows],
            ["value", "message", "last_seen"],
            batch_size=500,
        )
        return
    payload = json.dumps([{"id": i, "value": v, "message": m} for i, v, m in rows])
    with connection.cursor() as cursor:
        cursor.execute(
            statement.format(table=connection.ops.quote_name(Alert._meta.db_table)),
            [
                connection.ops.adapt_datetimefield_value(now),
                payload,
                Alert.State.RESOLVED.value,
            ],
        )
