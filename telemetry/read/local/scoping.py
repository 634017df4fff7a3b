"""Which telemetry entities a principal may read (the one tenant-scoping rule, applied)."""

from __future__ import annotations

from django.db.models import QuerySet

from accounts.selectors.scoping import scope_to_tenant
from telemetry.models import Entity


def entities_visible_to(user) -> QuerySet[Entity]:
    """Every entity for staff; a customer's own tenant's entities otherwise."""
    return scope_to_tenant(Entity.objects.all(), user)
