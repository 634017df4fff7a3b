"""Shared fixtures for app tests: a cluster, workloads, cards, alert rules and ingest tokens.

Loaded for every test by ``tests/conftest.py`` (``pytest_plugins``)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from accounts.services.tokens import token_create
from alerts.defaults import alert_rules_ensure
from alerts.models import AlertRule
from inventory.models import Cluster, Workload
from telemetry.models import Entity, MetricDefinition
from tests.factories import ClusterFactory, EntityFactory, WorkloadFactory


@pytest.fixture
def cluster(db) -> Cluster:
    return ClusterFactory(name="unified-a", kind=Cluster.Kind.UNIFIED)


@pytest.fixture
def workloads(cluster, tenants) -> dict[str, Workload]:
    return {
        "chat": WorkloadFactory(
            tenant=tenants["acme"],
            cluster=cluster,
            name="acme-chat",
            criticality=Workload.Criticality.CORE,
            slo_p99_ms=800,
        ),
        "asr": WorkloadFactory(tenant=tenants["panda"], cluster=cluster, name="panda-asr"),
    }


@pytest.fixture
def ingest_client(db) -> APIClient:
    issued = token_create(name="exporter", scopes=["ingest"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")
    return client


def sample(**overrides) -> dict:
    base = {
        "metric": "accelerator_utilization_ratio",
        "cluster": "unified-a",
        "entity_kind": "accelerator",
        "entity": "node1/0",
        "ts": 1_780_000_000,
        "value": 0.5,
    }
    base.update(overrides)
    return base


# --- alerting ----------------------------------------------------------------------------------

EXTRA_METRICS = {
    "link_status": "link",
    "memory_pool_allocation_failures_per_second": "memory_pool",
    "inference_slo_attainment_ratio": "workload",
}


@pytest.fixture
def rules(db) -> dict[str, AlertRule]:
    alert_rules_ensure()
    for name, kind in EXTRA_METRICS.items():
        MetricDefinition.objects.get_or_create(name=name, defaults={"entity_kind": kind})
    return {rule.name: rule for rule in AlertRule.objects.all()}


@pytest.fixture
def cards(cluster) -> list[Entity]:
    return [EntityFactory(cluster=cluster, key=f"sn0/r0/n0/c{i}") for i in range(3)]
