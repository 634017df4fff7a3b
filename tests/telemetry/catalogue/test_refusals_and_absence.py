"""Refusals are visible (issue 22 part 9) and absent cards are never healthy (part 1):
refused pushes are counted per reason in the database — on /metrics and /exporters/ with the
last refusal's reason — and a card its exporter stopped reporting is shown absent and alerts."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from accounts.services.tokens import token_create
from alerts.defaults import alert_rules_ensure
from alerts.evaluate import alerts_evaluate
from alerts.models import Alert
from inventory.models import Accelerator
from telemetry.models import IngestRefusal
from tests.telemetry.remote_write_helpers import write_request


@pytest.fixture
def ingest(db) -> APIClient:
    client = APIClient()
    client.credentials(
        HTTP_AUTHORIZATION=f"Bearer {token_create(name='prom', scopes=['ingest']).plaintext}"
    )
    return client


@pytest.fixture
def reader(db) -> APIClient:
    client = APIClient()
    client.credentials(
        HTTP_AUTHORIZATION=f"Bearer {token_create(name='graf', scopes=['read']).plaintext}"
    )
    return client


def remote_write(client, series, query="cluster=unified-a"):
    return client.generic(
        "POST",
        f"/api/v1/telemetry/remote-write/?{query}",
        data=write_request(series),
        content_type="application/x-protobuf",
        HTTP_CONTENT_ENCODING="snappy",
    )


def npu(now_ms: int, *, port: int, chip: int, vdie: bool = True, value: float = 40):
    labels = {
        "__name__": "npu_chip_info_utilization",
        "id": str(chip),
        "instance": f"10.0.0.5:{port}",
        "job": "npu",
    }
    if vdie:
        labels["vdie_id"] = f"VD-{port}-{chip}"
    return (labels, [(now_ms, value)])


def refused_metrics(reader) -> dict[tuple, float]:
    text = reader.get("/metrics").content.decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    return {
        (s.labels["cluster"], s.labels["path"], s.labels["reason"], s.labels["unit"]): s.value
        for s in families["portal_ingest_refused"].samples
        if s.name == "portal_ingest_refused_total"
    }


@pytest.mark.django_db
def test_a_misspelled_cluster_is_counted_as_a_refused_request(ingest, reader, cluster):
    now = int(time.time() * 1000)
    for _ in range(2):
        response = remote_write(ingest, [npu(now, port=1, chip=0)], query="cluster=unifed-a")
        assert response.status_code == 400

    # Counted under "" (an unknown name must not grow the table), the name in the message.
    assert refused_metrics(reader) == {("", "remote_write", "unknown_cluster", "requests"): 2.0}
    row = IngestRefusal.objects.get()
    assert "unifed-a" in row.last_message


@pytest.mark.django_db
def test_unattributable_samples_are_counted_per_reason_and_the_good_ones_stored(
    ingest, reader, cluster
):
    now = int(time.time() * 1000)
    ambiguous = [npu(now, port=p, chip=0, vdie=False) for p in (9101, 9102)]
    no_host = ({"__name__": "npu_chip_info_utilization", "id": "1", "vdie_id": "VD-x"}, [(now, 1)])
    response = remote_write(ingest, [*ambiguous, no_host, npu(now, port=9101, chip=5)])

    body = response.json()
    assert response.status_code == 200, body
    assert body["refused"] == {"ambiguous_chip": 2, "no_host": 1}
    assert body["inserted"] == 1
    assert refused_metrics(reader) == {
        ("unified-a", "remote_write", "ambiguous_chip", "samples"): 2.0,
        ("unified-a", "remote_write", "no_host", "samples"): 1.0,
    }


@pytest.mark.django_db
def test_a_text_push_refused_whole_is_counted_and_shown_with_its_reason(ingest, client_as, cluster):
    text = 'npu_chip_info_utilization{id="0",vdie_id="VD-0"} 40\n'  # no host, no node=
    response = ingest.post(
        "/api/v1/telemetry/prometheus/?cluster=unified-a",
        data=text.encode(),
        content_type="text/plain; version=0.0.4",
    )
    assert response.status_code == 400

    row = IngestRefusal.objects.get()
    assert (row.cluster_name, row.path, row.reason, row.unit, row.count) == (
        "unified-a",
        "prometheus",
        "no_host",
        "requests",
        1,
    )
    page = client_as("operator").get("/exporters/").content.decode()
    assert "Last refusal: no_host (exporter text push)" in page


@pytest.mark.django_db
def test_a_card_not_seen_for_its_absence_threshold_is_absent_and_alerts(ingest, reader, cluster):
    cluster.scrape_interval_seconds, cluster.absent_after_intervals = 15, 4
    cluster.save()
    alert_rules_ensure()
    now = int(time.time() * 1000)
    assert (
        remote_write(ingest, [npu(now, port=1, chip=0), npu(now, port=1, chip=1)]).status_code
        == 200
    )
    card = Accelerator.objects.get(vendor_id="VD-1-0")
    assert card.state_label() == "unknown" and not card.is_absent()

    alerts_evaluate()  # both seen just now: nothing fires
    assert not Alert.objects.filter(rule__name="accelerator-absent").exists()

    later = timezone.now() + timedelta(seconds=61)  # > 4 × 15 s without a sample
    Accelerator.objects.filter(vendor_id="VD-1-1").update(last_seen=later - timedelta(seconds=1))
    alerts_evaluate(now=later)

    (alert,) = Alert.objects.filter(rule__name="accelerator-absent")
    assert alert.entity.key == "VD-1-0" and alert.state == Alert.State.FIRING
    assert alert.value >= 1.0
    card.refresh_from_db()
    assert card.is_absent(later) and card.state_label(later) == "absent"

    # The card reports again: the alert resolves.
    Accelerator.objects.filter(vendor_id="VD-1-0").update(last_seen=later)
    alerts_evaluate(now=later + timedelta(seconds=1))
    alert.refresh_from_db()
    assert alert.state == Alert.State.RESOLVED


@pytest.mark.django_db
def test_metrics_and_the_card_list_say_absent_not_healthy(ingest, reader, cluster):
    now = int(time.time() * 1000)
    health = {"__name__": "npu_chip_info_health_status", "id": "0", "vdie_id": "VD-h"}
    health["instance"] = "10.0.0.5:9101"
    assert remote_write(ingest, [(health, [(now, 1)])]).status_code == 200
    card = Accelerator.objects.get(vendor_id="VD-h")
    assert card.health == Accelerator.Health.HEALTHY
    Accelerator.objects.filter(pk=card.pk).update(last_seen=timezone.now() - timedelta(hours=1))

    text = reader.get("/metrics").content.decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    states = {
        (s.labels["cluster"], s.labels["health"]): s.value
        for s in families["portal_accelerators"].samples
    }
    assert states == {("unified-a", "absent"): 1.0}
    listing = reader.get("/api/v1/accelerators/?cluster=unified-a").json()
    (row,) = listing["results"]
    assert row["health"] == "absent" and row["last_seen"] is not None
