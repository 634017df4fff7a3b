"""Attacks on ingestion (issue 15 §4, §6, §7), each replayed once."""

from __future__ import annotations

import json
import time

import pytest
from rest_framework.test import APIClient

from accounts.services.tokens import token_create
from inventory.models import Accelerator, Node
from telemetry.models import Entity, MetricDefinition, Sample
from tests.telemetry_fixtures import sample

PROM = "/api/v1/telemetry/prometheus/?cluster=unified-a&source=dcgm"
JSON_URL = "/api/v1/telemetry/samples/"


@pytest.fixture
def pusher(db) -> APIClient:
    client = APIClient()
    client.credentials(
        HTTP_AUTHORIZATION=f"Bearer {token_create(name='x', scopes=['ingest']).plaintext}"
    )
    return client


def gpu_line(metric="DCGM_FI_DEV_GPU_UTIL", gpu=0, host="dgx-01", value=50, ts=""):
    return (
        f'{metric}{{gpu="{gpu}",UUID="GPU-{host}-{gpu}",modelName="H100",Hostname="{host}"}} '
        f"{value} {ts}".rstrip()
    )


def push(client, text: str, url: str = PROM):
    return client.post(url, data=text.encode(), content_type="text/plain; version=0.0.4")


def nothing_registered() -> bool:
    return not (
        Node.objects.exists()
        or Accelerator.objects.exists()
        or Entity.objects.exists()
        or Sample.objects.exists()
        or MetricDefinition.objects.filter(mapped=False).exists()
    )


def test_a_body_over_the_limit_is_a_413_in_the_json_error_body_before_parsing(
    pusher, cluster, settings
):
    settings.INGEST_MAX_BODY_BYTES = 10_000
    comment = "# " + "x" * 20_000 + "\n" + gpu_line()
    response = push(pusher, comment)
    assert response.status_code == 413
    assert response.json()["code"] == "payload_too_large"
    big = json.dumps({"samples": [sample()] * 200})
    response = pusher.post(JSON_URL, data=big, content_type="application/json")
    assert response.status_code == 413 and response["Content-Type"] == "application/problem+json"
    assert nothing_registered()


def test_an_overlong_line_is_a_400_naming_the_cap(pusher, cluster, settings):
    settings.INGEST_MAX_LINE_BYTES = 1000
    response = push(pusher, gpu_line() + "\n" + 'x{a="' + "y" * 5000 + '"} 1\n')
    assert response.status_code == 400
    assert "INGEST_MAX_LINE_BYTES" in response.json()["detail"]
    assert nothing_registered()


def test_too_many_series_in_one_push_is_a_400_naming_the_cap(pusher, cluster, settings):
    settings.INGEST_MAX_SERIES = 10
    text = "\n".join(gpu_line(gpu=i % 8, value=i) for i in range(11))
    response = push(pusher, text)
    assert response.status_code == 400 and "INGEST_MAX_SERIES" in response.json()["detail"]
    assert nothing_registered()


def test_too_many_labels_on_a_series_is_a_400_naming_the_cap(pusher, cluster, settings):
    settings.INGEST_MAX_LABELS = 5
    labels = ",".join(f'l{i}="v"' for i in range(6))
    response = push(pusher, f'DCGM_FI_DEV_GPU_UTIL{{Hostname="h",gpu="0",{labels}}} 1')
    assert response.status_code == 400 and "INGEST_MAX_LABELS" in response.json()["detail"]


def test_the_documented_json_batch_cap_is_reachable_past_djangos_upload_limit(pusher, cluster):
    now = int(time.time()) - 60
    batch = [sample(entity=f"n{i % 50}/{i % 8}", ts=now - i) for i in range(25_000)]
    body = json.dumps({"samples": batch})
    assert len(body) > 2.5 * 1024 * 1024  # Django's DATA_UPLOAD_MAX_MEMORY_SIZE
    response = pusher.post(JSON_URL, data=body, content_type="application/json")
    assert response.status_code == 201, response.content[:300]
    assert response.json()["accepted"] == 25_000


def test_a_prometheus_point_in_the_year_5138_is_refused_like_a_json_one(pusher, cluster):
    far = 99_999_999_999_000  # milliseconds: year 5138
    response = push(pusher, gpu_line(ts=str(far)))
    assert response.status_code == 400
    assert response.json()["field"] == "timestamp"
    json_response = pusher.post(JSON_URL, {"samples": [sample(ts=far / 1000)]}, format="json")
    assert json_response.status_code == 400 and json_response.json()["field"] == "ts"
    assert nothing_registered()


def test_one_push_cannot_flood_the_catalogue_with_metric_names(pusher, cluster, settings):
    settings.TELEMETRY_MAX_NEW_METRICS_PER_PUSH = 5
    text = "\n".join(gpu_line(metric=f"DCGM_FI_FAKE_{i}") for i in range(6))
    response = push(pusher, text)
    assert response.status_code == 400
    assert "TELEMETRY_MAX_NEW_METRICS_PER_PUSH" in response.json()["detail"]
    assert nothing_registered()


def test_one_push_cannot_register_thousands_of_nodes_and_cards(pusher, cluster, settings):
    settings.TELEMETRY_MAX_NEW_ENTITIES_PER_PUSH = 8
    text = "\n".join(gpu_line(host=f"h{i}", gpu=0) for i in range(9))
    response = push(pusher, text)
    assert response.status_code == 400
    assert "TELEMETRY_MAX_NEW_ENTITIES_PER_PUSH" in response.json()["detail"]
    assert nothing_registered()
    settings.TELEMETRY_MAX_NEW_ENTITIES_PER_PUSH = 1000
    settings.TELEMETRY_MAX_ENTITIES_PER_CLUSTER = 4
    response = push(pusher, text)
    assert response.status_code == 400
    assert "TELEMETRY_MAX_ENTITIES_PER_CLUSTER" in response.json()["detail"]
    assert nothing_registered()


def test_exporter_only_metric_names_never_reach_the_catalogue_customers_read(
    pusher, cluster, client_as
):
    assert push(pusher, gpu_line(metric="DCGM_FI_SOMETHING_ODD")).status_code == 201
    (odd,) = MetricDefinition.objects.filter(mapped=False).values_list("name", flat=True)
    customer = client_as("customer").get("/api/v1/metrics/?page_size=1000").json()["results"]
    assert odd not in {m["name"] for m in customer}
    staff = client_as("operator").get("/api/v1/metrics/?page_size=1000").json()["results"]
    assert odd in {m["name"] for m in staff}


def test_an_overflowing_exporter_value_is_dropped_with_its_reason_never_stored(pusher, cluster):
    # Exporters print NaN/Inf for "no reading"; the push reports them as dropped (a whole
    # scrape is not refused for one), and nothing non-finite reaches the store.
    response = push(pusher, gpu_line(value="1e999"))
    assert response.status_code == 201
    assert response.json()["dropped"] == {"infinite_value": 1}
    assert not Sample.objects.exists()


@pytest.mark.parametrize(
    ("kind", "payload", "field"),
    [
        ("json", {"metric": "accelerator_utilization\x00ratio"}, "metric"),
        ("json", {"cluster": "unified-a\x00"}, "cluster"),
        ("json", {"entity": "node1/\x000"}, "entity"),
        ("json", {"entity": "n" * 301}, "entity"),
        ("json", {"entity": "node1/\u202e0"}, "entity"),
        ("json", {"value": 1e308 * 10}, None),
        ("digits", None, None),
        ("prom", gpu_line(host="dgx\\u0000"), None),
        ("prom", 'DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="a\x00b"} 1', "Hostname"),
        ("prom", gpu_line(ts="9" * 5000), "body"),
        ("deep", None, None),
        ("series", "start=1e20", "start"),
        ("series", "end=inf", "end"),
        ("series", "start=nan", "start"),
        ("series", "metric=a%00b", "metric"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_never_a_500(
    pusher, cluster, client_as, kind, payload, field
):
    if kind == "json":
        row = sample(ts=int(time.time()) - 10)
        row.update(payload)
        body = json.dumps({"samples": [row]}, allow_nan=True)
        response = pusher.post(JSON_URL, data=body, content_type="application/json")
    elif kind == "prom":
        response = push(pusher, payload)
    elif kind == "digits":
        row = json.dumps(sample()).replace('"ts": ', '"ts": ' + "9" * 5000 + ', "x": ')
        response = pusher.post(
            JSON_URL, data='{"samples": [' + row + "]}", content_type="application/json"
        )
    elif kind == "deep":
        body = "[" * 1000 + "]" * 1000
        response = pusher.post(JSON_URL, data=body, content_type="application/json")
    else:
        response = client_as("operator").get(
            f"/api/v1/telemetry/series/?metric=accelerator_utilization_ratio&entity=x&{payload}"
        )
    assert response.status_code == 400, response.content[:300]
    body = response.json()
    if field is not None:
        assert field == body.get("field") or field in body.get("errors", {}), body
    assert not Sample.objects.exists()
