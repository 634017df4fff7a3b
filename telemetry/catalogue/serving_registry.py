"""Serving endpoints and serving catalogue rows, registered on first sight by ingestion.

The mapping (``telemetry.families.serving``) is pure; this is its registry side, called by the
ingestion service (``telemetry.ingest.pipeline``) inside its transaction.
"""

from __future__ import annotations

from inventory.models import Cluster
from telemetry.catalogue.entities import entities_save, entity_build
from telemetry.families.serving import SERVING_KIND, catalogue_rows
from telemetry.models import Entity, MetricDefinition


def serving_catalogue_ensure(names: set[str]) -> None:
    """Catalogue rows for the serving names among ``names`` (histogram buckets are created
    the first time an engine reports that bound)."""
    rows = catalogue_rows(set(names))
    if not rows:
        return
    MetricDefinition.objects.bulk_create(
        [
            MetricDefinition(
                name=name,
                unit=unit,
                description=description[:400],
                entity_kind=SERVING_KIND,
                type=kind,
                mapped=True,
            )
            for name, unit, kind, description in rows
        ],
        ignore_conflicts=True,
    )


def endpoints_register(cluster: Cluster, keys: set[str]) -> dict[str, int]:
    """``{endpoint key: entity id}`` for ``keys``, creating the entities that are new."""
    entities_save(entity_build(cluster=cluster, kind=SERVING_KIND, key=key) for key in keys)
    return dict(
        Entity.objects.filter(cluster=cluster, kind=SERVING_KIND, key__in=keys).values_list(
            "key", "id"
        )
    )
