"""Issue 24: overview tiles that agree with each other and with the alerts.

"TTFT P99 (worst service) 11.2 s" sat beside "SLO attainment 99.9%" while alerts showed
services at 0.73–0.83: the attainment tile was the cluster's request-weighted scalar (1.0 when
idle), the latency tile the newest value of any service. Now both are the worst of the same
services (those that served requests) over the same five minutes, and say so.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import transaction

from alerts.defaults import alert_rules_ensure
from alerts.evaluate import alerts_evaluate
from alerts.models import Alert
from inventory.models import Cluster, Workload
from telemetry.models import Entity, EntityKind
from telemetry.receivers.twin import samples_write
from tests.cost.cost_data import metric

SERVICES = {
    # name: (requests/s, attainment, TTFT P99 s)
    "chat-big": (100.0, 0.999, 0.2),
    "asr-small": (1.0, 0.75, 11.2),
}


def _write(entity: Entity, values: dict[str, float], minutes: range) -> None:
    now = datetime.now(tz=UTC)
    rows = []
    for name, value in values.items():
        m = metric(name, "workload")
        rows += [
            (m.pk, entity.pk, (now - timedelta(minutes=i)).timestamp(), value) for i in minutes
        ]
    with transaction.atomic():
        samples_write(rows)


@pytest.fixture
def serving(db, tenants):
    cluster = Cluster.objects.create(name="uni", kind=Cluster.Kind.UNIFIED)
    cluster_entity = Entity.objects.create(cluster=cluster, kind=EntityKind.CLUSTER, key="cluster")
    m = metric("cluster_inference_slo_attainment_ratio", "cluster")
    with transaction.atomic():  # what the twin writes: request-weighted, 99.9 %
        samples_write([(m.pk, cluster_entity.pk, datetime.now(tz=UTC).timestamp() - 30, 0.999)])
    for name, (rate, attainment, ttft) in {
        **SERVICES,
        "idle-svc": (0.0, 1.0, 0.1),  # no requests: no attainment to count
    }.items():
        workload = Workload.objects.create(
            tenant=tenants["acme"], cluster=cluster, name=name, kind="inference"
        )
        entity = Entity.objects.create(
            cluster=cluster, kind=EntityKind.WORKLOAD, key=name, workload=workload
        )
        _write(
            entity,
            {
                "inference_request_rate_per_second": rate,
                "inference_slo_attainment_ratio": attainment,
                "inference_ttft_p99_seconds": ttft,
                "inference_tpot_p99_seconds": 0.03,
            },
            range(1, 4),
        )
    # A service that stopped an hour ago: its last TTFT was awful, but it is not in the set.
    stale = Workload.objects.create(
        tenant=tenants["acme"], cluster=cluster, name="old", kind="inference"
    )
    _write(
        Entity.objects.create(cluster=cluster, kind=EntityKind.WORKLOAD, key="old", workload=stale),
        {"inference_request_rate_per_second": 5.0, "inference_ttft_p99_seconds": 30.0},
        range(60, 63),
    )
    return cluster


def _tiles(client) -> dict:
    data = client.get("/api/v1/dashboards/overview/?range=1h").json()
    return {k["key"]: k for k in data["kpis"]}


def test_attainment_and_worst_p99_come_from_the_same_services_and_window(serving, client_as):
    tiles = _tiles(client_as("operator"))
    attainment, ttft = tiles["slo_attainment"], tiles["ttft"]
    # The worst service, not the cluster's 99.9 %.
    assert attainment["value"] == pytest.approx(0.75)
    assert ttft["value"] == pytest.approx(11.2)
    assert "asr-small" in attainment["hint"] and "asr-small" in ttft["hint"]
    # Both say which window and set they cover, in the same words.
    scope = "last 5 min, the same 2 services with traffic"
    assert scope in attainment["hint"] and scope in ttft["hint"] and scope in tiles["tpot"]["hint"]
    # The request-weighted figure over the same set is beside it, labelled.
    weighted = (100 * 0.999 + 1 * 0.75) / 101
    assert f"request-weighted {weighted * 100:.1f}%" in attainment["hint"]


def test_the_worst_service_tile_matches_what_the_slo_alert_fires_on(serving, client_as):
    alert_rules_ensure()
    alerts_evaluate(now=datetime.now(tz=UTC))
    firing = Alert.objects.filter(rule__name="slo-fast-burn", state=Alert.State.FIRING)
    assert [a.entity.key for a in firing] == ["asr-small"]
    tiles = _tiles(client_as("operator"))
    assert tiles["slo_attainment"]["value"] == pytest.approx(min(a.value for a in firing))


def test_without_traffic_the_tiles_say_so_instead_of_showing_a_figure(db, users, client_as):
    Cluster.objects.create(name="quiet", kind=Cluster.Kind.UNIFIED)
    tiles = _tiles(client_as("operator"))
    assert tiles["slo_attainment"]["value"] is None and tiles["ttft"]["value"] is None
    assert "no service served requests in the last 5 min" in tiles["slo_attainment"]["hint"]


def test_with_histograms_the_latency_tile_is_a_percentile_of_the_windows_requests(
    serving, client_as
):
    from telemetry.read.local.histograms import histogram_quantile
    from tests.dashboards.serving_data import buckets_of, write_requests

    now = datetime.now(tz=UTC).timestamp()
    steps = {
        "chat-big": {"ttft": [0.03] * 99 + [0.9]},
        "asr-small": {"ttft": [0.3] * 5},
    }
    for name, step in steps.items():
        entity = Entity.objects.get(cluster=serving, key=name)
        write_requests(entity, [(now - 120, step), (now - 60, step)])
    ttft = _tiles(client_as("operator"))["ttft"]
    # asr-small's P99 (its 0.3 s requests) is the worst; beside it the P99 of all requests.
    worst = histogram_quantile(0.99, buckets_of("serving_ttft_seconds", [0.3] * 10))
    assert ttft["value"] == pytest.approx(worst)
    assert "asr-small" in ttft["hint"] and "all requests" in ttft["hint"]
    assert "approximation" not in ttft["hint"]
