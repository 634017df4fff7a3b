"""The one tenant-scoping rule: which rows a principal may read.

Staff users and operator-level tokens see every entity; customers and tenant-bound tokens see
only entities owned by their tenant (workloads). Infrastructure (cards, links, racks) is shared
and not tenant-owned, so customers see it only through their workloads' figures.
"""

from __future__ import annotations

from typing import TypeVar

from django.db.models import Model, QuerySet

M = TypeVar("M", bound=Model)


def principal_sees_all(user) -> bool:
    return bool(getattr(user, "sees_all_tenants", False))


def scope_to_tenant(queryset: QuerySet[M], user, tenant_field: str = "tenant") -> QuerySet[M]:
    """THE tenant rule, for any tenant-owned queryset: staff and operator-level tokens see
    every row; customers and tenant-bound tokens only rows whose ``tenant_field`` (a lookup
    path such as ``"plan__tenant"``) is their tenant; a principal with neither sees nothing.
    """
    if principal_sees_all(user):
        return queryset
    tenant_id = getattr(user, "tenant_id", None)
    if tenant_id is None:
        return queryset.none()
    return queryset.filter(**{f"{tenant_field}_id": tenant_id})
