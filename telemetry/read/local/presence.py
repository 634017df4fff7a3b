"""Which exporter-fed cards are absent (issue 22 part 1): not seen for their cluster's
``absent_after_intervals`` × ``scrape_interval_seconds`` (``Accelerator.last_seen`` is set per
ingested batch). Read by the absence alert rule, ``/metrics`` and pages."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Q

from inventory.models import Cluster
from telemetry.models import Entity, EntityKind
from telemetry.read.local.kind_windows import WindowValues

# The alert rule's "metric": scrape intervals missed ÷ the cluster's "absent after" intervals;
# 1 or more means absent. Computed from inventory, not stored as samples.
ABSENCE_METRIC = "accelerator_absence_ratio"


def absence_window(*, now: datetime) -> WindowValues:
    """The absence ratio of every card an exporter has reported, by entity id (present cards
    too, so their alerts resolve), with ``(key, tenant)`` labels."""
    result = WindowValues()
    rows = Entity.objects.filter(
        kind=EntityKind.ACCELERATOR, accelerator__last_seen__isnull=False
    ).values_list(
        "id",
        "key",
        "tenant_id",
        "accelerator__last_seen",
        "cluster__scrape_interval_seconds",
        "cluster__absent_after_intervals",
    )
    for entity_id, key, tenant_id, last_seen, interval, intervals in rows.iterator(2000):
        missed = max((now - last_seen).total_seconds(), 0.0) / interval
        result.values[entity_id] = round(missed / intervals, 3)
        result.labels[entity_id] = (key, tenant_id)
    return result


def accelerators_absent_q(*, now: datetime, prefix: str = "") -> Q:
    """A filter for absent cards (``prefix``: the lookup path to the accelerator, e.g.
    ``"accelerator__"`` from entities). One term per cluster: clusters number in the tens."""
    q = Q(pk__in=[])
    for cluster in Cluster.objects.only("id", "scrape_interval_seconds", "absent_after_intervals"):
        q |= Q(
            **{
                f"{prefix}node__cluster_id": cluster.id,
                f"{prefix}last_seen__lt": now - cluster.absence_after(),
            }
        )
    return q
