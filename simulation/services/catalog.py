"""Day-0 models: add a model from its Hugging Face ``config.json`` and make every process
(web, workers) know it before it builds a scenario."""

from __future__ import annotations

from django.db import transaction

from simulation.engine import MODELS, ModelSpec
from simulation.engine.models_hf import model_from_hf_config
from simulation.models import CatalogModel

USER_SOURCE = "user config.json"


def catalog_models_register() -> int:
    """Put every added model into the engine's catalog (idempotent; one query)."""
    count = 0
    for row in CatalogModel.objects.only("spec"):
        spec = ModelSpec(**row.spec)
        current = MODELS.get(spec.id)
        if current is None or current.source == USER_SOURCE:
            MODELS[spec.id] = spec
            count += 1
    return count


@transaction.atomic
def catalog_model_add(*, model_id: str, config: dict, created_by, name: str = "") -> CatalogModel:
    """Build the engine's model from ``config`` (``ValueError`` names the bad field) and save it.

    A built-in catalog id cannot be replaced; re-adding a day-0 id updates it.
    """
    existing = MODELS.get(model_id)
    if existing is not None and existing.source != USER_SOURCE:
        raise ValueError(f"model_id: {model_id!r} is a built-in catalog model; choose another id")
    spec = model_from_hf_config(config, model_id=model_id, name=name or None)
    row, _ = CatalogModel.objects.update_or_create(
        model_id=spec.id,
        defaults={
            "name": spec.name,
            "config": config,
            "spec": spec.to_dict(),
            "created_by": created_by,
        },
    )
    MODELS[spec.id] = spec
    return row
