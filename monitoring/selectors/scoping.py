"""The one place that decides which entities a principal may read.

Staff users and operator-level tokens see every entity; customers and tenant-bound tokens see
only entities owned by their tenant (workloads). Infrastructure (cards, links, racks) is shared
and not tenant-owned, so customers see it only through their workloads' figures.
"""

from __future__ import annotations

from django.db.models import QuerySet

from monitoring.models import Entity


def principal_sees_all(user) -> bool:
    return bool(getattr(user, "sees_all_tenants", False))


def entities_visible_to(user) -> QuerySet[Entity]:
    entities = Entity.objects.all()
    if principal_sees_all(user):
        return entities
    tenant_id = getattr(user, "tenant_id", None)
    if tenant_id is None:
        return entities.none()
    return entities.filter(tenant_id=tenant_id)
