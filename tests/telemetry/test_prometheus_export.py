"""/metrics is valid Prometheus text that prometheus_client's parser reads back."""

from __future__ import annotations

import time

import pytest
from django.db import transaction
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from accounts.services.tokens import token_create
from inventory.models import Accelerator, Node
from telemetry.ingest.twin import samples_write
from telemetry.models import Entity, MetricDefinition
from telemetry.services.heartbeats import heartbeat_record
from tests.access import ApiAccessCases


class TestMetricsEndpointAccess(ApiAccessCases):
    url = "/metrics"
    allowed_roles = ("operator", "approver")


@pytest.mark.django_db
def test_metrics_parse_and_carry_utilization_health_and_heartbeats(cluster):
    node = Node.objects.create(cluster=cluster, hostname="n1")
    card = Accelerator.objects.create(node=node, index=0, vendor_id="G0", health=1)
    entity = Entity.objects.create(
        cluster=cluster, kind="accelerator", key="n1/0", accelerator=card
    )
    metric = MetricDefinition.objects.get(name="accelerator_utilization_ratio")
    with transaction.atomic():
        samples_write([(metric.id, entity.id, time.time() - 30, 0.75)])
    heartbeat_record(kind="worker", name="celery@w1")
    client = APIClient()
    client.credentials(
        HTTP_AUTHORIZATION=f"Bearer {token_create(name='prom', scopes=['read']).plaintext}"
    )
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(response.content.decode())}
    util = {
        s.labels["cluster"]: s.value for s in families["portal_cluster_utilization_ratio"].samples
    }
    assert util == {"unified-a": pytest.approx(0.75)}
    cards = {
        (s.labels["cluster"], s.labels["health"]): s.value
        for s in families["portal_accelerators"].samples
    }
    assert cards == {("unified-a", "healthy"): 1.0}
    alive = {s.labels["kind"]: s.value for s in families["portal_processes_alive"].samples}
    assert alive["worker"] == 1.0


@pytest.mark.django_db
def test_a_tenant_token_cannot_scrape_metrics(tenants):
    client = APIClient()
    issued = token_create(name="t", scopes=["read"], tenant=tenants["acme"])
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")
    assert client.get("/metrics").status_code == 403
