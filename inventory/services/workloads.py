"""Workload writes: the series selector that binds a real cluster's cards to a workload."""

from __future__ import annotations

from django.db import transaction

from inventory.models import Workload


@transaction.atomic
def workload_selector_set(*, workload_id: int, selector: str) -> Workload:
    """Set (or clear, with ``""``) a workload's series selector. Validation is the model's
    (``Workload.clean``): a bad selector raises ``ValidationError`` naming the problem and
    nothing is saved. Page, API and admin all call this."""
    workload = Workload.objects.select_for_update().get(pk=workload_id)
    workload.series_selector = selector.strip()
    workload.full_clean(validate_unique=False, validate_constraints=False)
    workload.save(update_fields=["series_selector"])
    return workload
