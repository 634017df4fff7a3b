"""Redis (broker and cache) stopped: reads keep working, readiness and the status page say so."""

from __future__ import annotations

import logging

import pytest
import redis

from inventory.models import Cluster
from simulation.engine import default_scenario
from simulation.services import twin_run_create, twin_tick

READS = (
    "/",
    "/dashboards/",
    "/status/",
    "/twin/",
    "/api/v1/alerts/",
    "/api/v1/dashboards/overview/?range=1h",
    "/api/v1/dashboards/hardware/?range=1h",
)


@pytest.fixture
def twin_with_data(db):
    cluster = Cluster.objects.create(name="outage-twin", kind=Cluster.Kind.UNIFIED)
    run = twin_run_create(
        name="outage-twin", cluster=cluster, scenario=default_scenario(cards=64, seed=5)
    )
    assert twin_tick(run_id=run.pk, expected_seq=0).committed
    return run


@pytest.mark.slow
@pytest.mark.django_db
def test_with_redis_stopped_reads_answer_and_readiness_names_the_broker(
    client_as, settings, portal_on_private_redis, twin_with_data, caplog
):
    settings.DASHBOARD_CACHE_SECONDS = 10
    client = client_as("operator")

    # Up: ready, and dashboard payloads are shared through the (private) Redis cache.
    ready = client.get("/readyz")
    assert ready.status_code == 200, ready.json()
    for url in READS:
        assert client.get(url).status_code == 200, url
    cached = redis.Redis.from_url(portal_on_private_redis.url).keys("*payload:*")
    assert cached, "the dashboard payloads should be cached in Redis while it is up"

    portal_on_private_redis.stop()

    with caplog.at_level(logging.WARNING, logger="cluster_portal.web.caching"):
        for url in READS:
            response = client.get(url)
            assert response.status_code == 200, (url, response.content[:300])
    assert "dashboard cache unavailable" in caplog.text

    # The payload is computed afresh, not an error body.
    overview = client.get("/api/v1/dashboards/overview/?range=1h").json()
    assert "kpis" in overview and "figures" in overview

    ready = client.get("/readyz")
    body = ready.json()
    assert ready.status_code == 503
    assert body["failing"] == ["broker"]
    assert body["components"]["database"]["ok"] is True

    page = client.get("/status/").content.decode()
    assert "The broker is down" in page
    partial = client.get("/status/?partial=1").content.decode()
    assert "The broker is down" in partial and "unreachable" in partial

    # And back: Redis returns (empty) and everything is green again without a restart.
    portal_on_private_redis.start()
    assert client.get("/readyz").status_code == 200
    assert "The broker is down" not in client.get("/status/").content.decode()
