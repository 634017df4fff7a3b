"""factory_boy factories for the tests, built on the services the product uses.

Entities go through :func:`telemetry.catalogue.entities.entity_build` — the one place that
fills in an entity's topology path and tenant — so a test entity is shaped exactly like one
the twin or an exporter registers.
"""

from __future__ import annotations

import factory
from factory.django import DjangoModelFactory

from accounts.models import Tenant
from inventory.models import Cluster, Workload
from telemetry.catalogue.entities import entity_build
from telemetry.models import Entity, EntityKind


class TenantFactory(DjangoModelFactory):
    class Meta:
        model = Tenant
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"tenant-{n}")
    name = factory.LazyAttribute(lambda t: t.slug.replace("-", " ").title())


class ClusterFactory(DjangoModelFactory):
    class Meta:
        model = Cluster
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"cluster-{n}")
    kind = Cluster.Kind.UNIFIED


class WorkloadFactory(DjangoModelFactory):
    class Meta:
        model = Workload

    tenant = factory.SubFactory(TenantFactory)
    cluster = factory.SubFactory(ClusterFactory)
    name = factory.Sequence(lambda n: f"workload-{n}")
    kind = Workload.Kind.INFERENCE


class EntityFactory(factory.Factory):
    """An entity saved through the entity service (``workload=`` also sets its tenant)."""

    class Meta:
        model = Entity

    cluster = factory.SubFactory(ClusterFactory)
    kind = EntityKind.ACCELERATOR
    key = factory.Sequence(lambda n: f"sn0/r0/n0/c{n}")

    @classmethod
    def _create(cls, model_class, **kwargs) -> Entity:
        entity = entity_build(**kwargs)
        entity.save()
        return entity

    @classmethod
    def _build(cls, model_class, **kwargs) -> Entity:
        return entity_build(**kwargs)
