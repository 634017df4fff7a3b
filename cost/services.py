"""Writes of the cost model: saving the operator's cost inputs."""

from __future__ import annotations

from django.db import transaction

from cost.models import CostAssumptions
from inventory.models import Cluster


@transaction.atomic
def cost_assumptions_save(*, cluster: Cluster | None, values: dict) -> CostAssumptions:
    """Create or update the inputs row of ``cluster`` (``None``: the global default).

    ``values`` must already be validated (the form does it through the model's ``clean``).
    An existing row is locked so concurrent saves apply one after the other; two concurrent
    first saves of one scope are stopped by the unique constraints (the second one fails).
    """
    # order_by("pk"): the default ordering joins the cluster, and PostgreSQL refuses FOR
    # UPDATE on the nullable side of that outer join.
    existing = CostAssumptions.objects.select_for_update().filter(cluster=cluster).order_by("pk")
    row = existing.first() or CostAssumptions(cluster=cluster)
    for name, value in values.items():
        setattr(row, name, value)
    row.full_clean()
    row.save()
    return row
