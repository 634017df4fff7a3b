"""Read API: series at automatic resolution, accelerators with latest values, tenant scoping."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from django.db import transaction

from inventory.models import Accelerator, Node
from telemetry.models import Entity, MetricDefinition
from telemetry.read.local.series import choose_source
from telemetry.receivers.twin import samples_write
from tests.access import ApiAccessCases


@pytest.fixture
def recorded(cluster, workloads):
    """Two hours of minute samples for one card and both tenants' workloads."""
    node = Node.objects.create(cluster=cluster, hostname="node1")
    card = Accelerator.objects.create(node=node, index=0, vendor_id="GPU-1", model_name="H100")
    card_entity = Entity.objects.create(
        cluster=cluster, kind="accelerator", key="node1/0", node=node, accelerator=card
    )
    qps = MetricDefinition.objects.create(name="workload_qps", unit="1/s", entity_kind="workload")
    util = MetricDefinition.objects.get(name="accelerator_utilization_ratio")
    rows = []
    now = time.time()
    for workload in workloads.values():
        entity = Entity.objects.create(
            cluster=cluster,
            kind="workload",
            key=workload.name,
            workload=workload,
            tenant=workload.tenant,
        )
        rows += [(qps.id, entity.id, now - 60 * i, float(i)) for i in range(120)]
    rows += [(util.id, card_entity.id, now - 60 * i, 0.5) for i in range(120)]
    with transaction.atomic():
        samples_write(rows)
    return {"card": card}


class TestSeriesEndpoint(ApiAccessCases):
    url = "/api/v1/telemetry/series/?metric=accelerator_utilization_ratio&entity=node1/0"
    allowed_roles = ("operator", "approver")  # customers get 404 for infrastructure, see below

    @pytest.fixture(autouse=True)
    def _data(self, recorded):
        pass

    @pytest.mark.django_db
    @pytest.mark.parametrize("role", ["customer", "other_customer"])
    def test_each_role_gets_the_data_or_a_403(self, client_as, users, role):
        assert client_as(role).get(self.url).status_code == 404


class TestAcceleratorList(ApiAccessCases):
    url = "/api/v1/accelerators/?cluster=unified-a"
    allowed_roles = ("operator", "approver")

    @pytest.fixture(autouse=True)
    def _data(self, recorded):
        pass


@pytest.mark.django_db
def test_a_one_hour_series_reads_raw_samples(client_as, recorded):
    body = (
        client_as("operator")
        .get("/api/v1/telemetry/series/?metric=accelerator_utilization_ratio&entity=node1/0")
        .json()
    )
    assert body["source"] == "raw"
    assert 55 <= len(body["points"]) <= 61
    assert all(p["mean"] == 0.5 for p in body["points"])


@pytest.mark.parametrize(
    ("span", "source"),
    [
        (timedelta(hours=1), "raw"),
        (timedelta(hours=6), "rollup:60"),
        (timedelta(days=7), "rollup:900"),
        (timedelta(days=30), "rollup:3600"),
        (timedelta(days=400), "rollup:86400"),
    ],
)
def test_range_reads_pick_a_resolution_giving_300_to_1000_points(span, source):
    end = datetime(2026, 11, 1, tzinfo=UTC)
    chosen, resolution, step = choose_source(end - span, end)
    assert chosen == source
    points = span.total_seconds() / step
    assert 300 <= points <= 1000 or (source == "raw" and points <= 1000)
    if resolution:
        assert step % resolution == 0


@pytest.mark.django_db
def test_a_customer_reads_their_own_workload_series_but_not_another_tenants(client_as, recorded):
    client = client_as("customer")
    own = client.get("/api/v1/telemetry/series/?metric=workload_qps&entity=acme-chat")
    assert own.status_code == 200
    assert len(own.json()["points"]) > 50
    other = client.get("/api/v1/telemetry/series/?metric=workload_qps&entity=panda-asr")
    assert other.status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("metric=nope&entity=node1/0", "metric"),
        ("metric=accelerator_utilization_ratio", "entity"),
        (
            "metric=accelerator_utilization_ratio&entity=node1/0&start=2026-01-02T00:00:00Z&end=2026-01-01T00:00:00Z",
            "start",
        ),
        ("metric=accelerator_utilization_ratio&entity=node1/0&start=soon", "start"),
        ("metric=accelerator_utilization_ratio&entity=node1/0&kind=toaster", "kind"),
    ],
)
def test_bad_series_queries_name_the_parameter(client_as, recorded, query, field):
    response = client_as("operator").get(f"/api/v1/telemetry/series/?{query}")
    assert response.status_code == 400
    assert field in response.json()["errors"]


@pytest.mark.django_db
def test_accelerator_list_carries_health_and_latest_values(client_as, recorded):
    body = client_as("operator").get("/api/v1/accelerators/?cluster=unified-a").json()
    assert body["count"] == 1
    card = body["results"][0]
    assert card["vendor_id"] == "GPU-1" and card["node"] == "node1"
    assert card["health"] == "unknown"
    assert card["latest"] == {"accelerator_utilization_ratio": 0.5}


@pytest.mark.django_db
def test_accelerator_list_needs_a_known_cluster(client_as, recorded):
    client = client_as("operator")
    assert client.get("/api/v1/accelerators/").status_code == 400
    assert client.get("/api/v1/accelerators/?cluster=nowhere").status_code == 404


class TestMetricCatalogue(ApiAccessCases):
    url = "/api/v1/metrics/"


@pytest.mark.django_db
def test_the_catalogue_lists_core_metrics_with_units(client_as):
    body = client_as("customer").get("/api/v1/metrics/?page_size=500").json()
    by_name = {m["name"]: m for m in body["results"]}
    assert by_name["accelerator_utilization_ratio"]["unit"] == "ratio"
    assert by_name["accelerator_health_status"]["entity_kind"] == "accelerator"


def _fleet(cluster, cards: int) -> None:
    """``cards`` cards on 4-card nodes, three metrics each at three times (newest: ``i``)."""
    metrics = MetricDefinition.objects.filter(
        name__in=[
            "accelerator_utilization_ratio",
            "accelerator_power_watts",
            "accelerator_temperature_celsius",
        ]
    )
    rows = []
    now = time.time()
    for i in range(cards):
        node, _ = Node.objects.get_or_create(cluster=cluster, hostname=f"n{i // 4:03d}")
        card = Accelerator.objects.create(node=node, index=i % 4, vendor_id=f"GPU-{i}")
        entity = Entity.objects.create(
            cluster=cluster,
            kind="accelerator",
            key=f"n{i // 4}/{i % 4}",
            node=node,
            accelerator=card,
        )
        for metric in metrics:
            rows += [(metric.id, entity.id, now - 30 * age, float(i - age)) for age in range(3)]
    with transaction.atomic():
        samples_write(rows)


@pytest.mark.django_db
def test_the_accelerator_list_costs_no_more_queries_for_60_cards_than_for_4(client_as, cluster):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = client_as("operator")
    _fleet(cluster, 4)
    with CaptureQueriesContext(connection) as small:
        assert client.get("/api/v1/accelerators/?cluster=unified-a").status_code == 200
    Node.objects.filter(cluster=cluster).delete()  # its cards and their entities go with it
    _fleet(cluster, 60)
    with CaptureQueriesContext(connection) as large:
        body = client.get("/api/v1/accelerators/?cluster=unified-a&page_size=1000").json()
    assert body["count"] == 60
    assert len(large.captured_queries) <= len(small.captured_queries)
    # Each card shows its own newest value of every metric, not a neighbour's or an older one.
    by_vendor = {card["vendor_id"]: card["latest"] for card in body["results"]}
    for i in (0, 17, 59):
        assert by_vendor[f"GPU-{i}"] == {
            "accelerator_utilization_ratio": float(i),
            "accelerator_power_watts": float(i),
            "accelerator_temperature_celsius": float(i),
        }
