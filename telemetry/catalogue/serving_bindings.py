"""Serving-binding writes: which serving endpoints a workload is. Page, API and admin all
call these, so validation (the model's ``clean`` and its uniqueness) is one path."""

from __future__ import annotations

from django.db import transaction

from inventory.models import Workload
from telemetry.catalogue.vouching import evidence_source_authored
from telemetry.models import ServingBinding


@transaction.atomic
def serving_binding_create(
    *, workload_id: int, model_name: str, instance: str = "", created_by_id: int | None = None
) -> ServingBinding:
    """Bind ``model_name`` (on ``instance``, or every replica when empty) to a workload.

    Raises ``ValidationError`` naming the field for a bad name, a non-inference workload or a
    binding the workload already has; nothing is saved then.
    """
    workload = Workload.objects.select_for_update().get(pk=workload_id)
    binding = ServingBinding(
        workload=workload, model_name=model_name.strip(), instance=instance.strip()
    )
    evidence_source_authored(source=binding, user_id=created_by_id)
    binding.full_clean()
    binding.save()
    return binding


@transaction.atomic
def serving_binding_delete(*, binding_id: int) -> None:
    """Remove one binding (its endpoints' samples stay; gates stop reading them)."""
    ServingBinding.objects.filter(pk=binding_id).delete()
