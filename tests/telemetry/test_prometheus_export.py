"""/metrics is valid Prometheus text that prometheus_client's parser reads back."""

from __future__ import annotations

import time

import pytest
from django.db import transaction
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from accounts.services.tokens import token_create
from inventory.models import Accelerator, Node
from telemetry.catalogue.heartbeats import heartbeat_record
from telemetry.models import Entity, MetricDefinition
from telemetry.receivers.twin import samples_write
from tests.access import ApiAccessCases
from tests.telemetry_fixtures import sample


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


def _counters(client) -> dict[str, float]:
    families = text_string_to_metric_families(client.get("/metrics").content.decode())
    return {s.name: s.value for f in families for s in f.samples if s.name.endswith("_total")}


@pytest.mark.django_db(transaction=True)
def test_stored_samples_and_idempotent_batches_are_counters_of_committed_writes(
    cluster, ingest_client
):
    """Issue 34, item 4: counters + rate() instead of windowed gauges. A total counts what
    committed, once: not a duplicate, not a replayed batch, not a rolled-back write."""
    node = Node.objects.create(cluster=cluster, hostname="n1")
    card = Accelerator.objects.create(node=node, index=0, vendor_id="G0", health=1)
    entity = Entity.objects.create(
        cluster=cluster, kind="accelerator", key="n1/0", accelerator=card
    )
    metric = MetricDefinition.objects.get(name="accelerator_utilization_ratio")
    scraper = APIClient()
    scraper.credentials(
        HTTP_AUTHORIZATION=f"Bearer {token_create(name='prom', scopes=['read']).plaintext}"
    )
    before = _counters(scraper)
    assert "portal_samples_stored_last_5m" not in before  # the windowed gauges are gone
    rows = [(metric.id, entity.id, time.time() - 60 + i, 0.5) for i in range(3)]
    with transaction.atomic():
        samples_write(rows)
    with transaction.atomic():
        samples_write(rows)  # the same samples again: nothing new stored
    with pytest.raises(RuntimeError), transaction.atomic():
        samples_write([(metric.id, entity.id, time.time() - 10, 0.5)])
        raise RuntimeError("the write's transaction rolls back")
    batch = {"samples": [sample(entity="n1/0", ts=time.time() - 5, value=0.4)]}
    for _ in range(2):  # the second is a replay of the first
        response = ingest_client.post(
            "/api/v1/telemetry/samples/", batch, format="json", headers={"Idempotency-Key": "k-1"}
        )
        assert response.status_code in (200, 201), response.content
    after = _counters(scraper)
    stored = after["portal_samples_stored_total"] - before.get("portal_samples_stored_total", 0)
    assert stored == 3 + 1  # three samples, then the batch's one
    batches = after["portal_ingestion_batches_total"] - before.get(
        "portal_ingestion_batches_total", 0
    )
    assert batches == 1
