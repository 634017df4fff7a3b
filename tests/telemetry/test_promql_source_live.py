"""PromQL as a data source, against a real Prometheus scraping fixture exporters: the read API
answers a configured cluster from the server (nothing copied into the store), with the
ingestion path's entity keys and units; a down or slow server is "data source unavailable"."""

from __future__ import annotations

import socket
import threading
import time
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from accounts.services.tokens import token_create
from inventory.models import Accelerator, Cluster
from telemetry import read
from telemetry.models import Entity, MetricDefinition, PromQLDataSource, Sample
from telemetry.read.promql.client import PromQLClient
from telemetry.read.promql.reads import promql_inventory_sync
from telemetry.receivers.twin import catalogue_sync
from tests.servers import (
    PrometheusServer,
    VictoriaMetricsServer,
    free_port,
    victoria_metrics_binary,
)
from tests.telemetry.prometheus_fixtures import remote_write_config, scrape_config

pytestmark = [pytest.mark.slow, pytest.mark.django_db]
UTIL = "accelerator_utilization_ratio"


@pytest.fixture(autouse=True)
def loopback_allowed(settings):
    """The test's Prometheus listens on loopback, which the outbound policy refuses unless an
    operator allow-lists it (OUTBOUND_ALLOWED_NETWORKS)."""
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]


@pytest.fixture(params=["prometheus", "victoria-metrics"])
def prometheus(request, tmp_path, prometheus_required, exporters):
    """The query engine the cluster's PromQL source points at: Prometheus itself, or a
    VictoriaMetrics that Prometheus remote-writes its scrapes into (Debian's packages both)."""
    engine = None
    config = scrape_config(exporters)
    if request.param == "victoria-metrics":
        if victoria_metrics_binary() is None:
            pytest.skip(
                "victoria-metrics is not installed (Debian package `victoria-metrics`; "
                "`make test` installs it when run as root with apt)"
            )
        engine = VictoriaMetricsServer(tmp_path / "victoria-metrics").start()
        config += remote_write_config(f"{engine.url}/api/v1/write", "unused")
    server = PrometheusServer(tmp_path / "prometheus", config).start()
    try:
        # VictoriaMetrics computes a range query's point at t from the samples in (t - step, t]
        # (Prometheus looks back 5 min), so a 5-minute read at a 15 s step shows points only
        # once the data spans a step: wait for 20 s of scrapes there.
        yield _scraped(engine or server, server, points=20 if engine else 4)
    finally:
        server.stop()
        if engine is not None:
            engine.stop()


def _scraped(engine, prometheus, *, points: int):
    """``engine`` once it answers ``points`` points of every card's utilisation."""
    client = PromQLClient(cluster="x", url=engine.url)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        now = datetime.now(tz=UTC)
        got = client.query('count_over_time({__name__=~"DCGM_FI_DEV_GPU_UTIL"}[1m])', at=now)
        if len(got) >= 2 and min(p[1] for s in got for p in s.points) >= points:
            break
        time.sleep(0.5)
    else:
        raise AssertionError(
            f"{engine.url} never had the scrapes: {prometheus.log.read_text()[-2000:]}"
        )
    return engine


@pytest.fixture
def promql_cluster(prometheus) -> Cluster:
    catalogue_sync()
    cluster = Cluster.objects.create(name="thanos-a", kind=Cluster.Kind.UNIFIED)
    source = PromQLDataSource.objects.create(cluster=cluster, url=prometheus.url)
    assert promql_inventory_sync(source) == 4
    return cluster


def test_reads_come_from_the_promql_server_with_ingestion_keys_and_units(promql_cluster):
    cluster = promql_cluster
    assert set(
        Entity.objects.filter(cluster=cluster, kind="accelerator").values_list("key", flat=True)
    ) == {
        "GPU-aaa",
        "GPU-bbb",
        "VD-0",
        "VD-1",
    }
    ids = dict(Entity.objects.filter(cluster=cluster).values_list("key", "id"))
    now = datetime.now(tz=UTC)

    # Heatmaps: the newest value per card, in catalogue units.
    snap = read.latest_kind(cluster.id, "accelerator", [UTIL, "accelerator_hbm_total_bytes"])
    by_entity = snap.by_entity()
    assert by_entity[ids["GPU-aaa"]][UTIL] == pytest.approx(0.87)
    assert by_entity[ids["VD-1"]][UTIL] == pytest.approx(0.66)
    assert by_entity[ids["GPU-bbb"]]["accelerator_hbm_total_bytes"] == 81920 * 2**20

    # Series at a chosen step, and gates' window aggregates from raw values.
    metric = MetricDefinition.objects.get(name=UTIL)
    entity = Entity.objects.get(cluster=cluster, key="VD-0")
    series = read.series_read(
        metric=metric, entity=entity, start=now - timedelta(minutes=5), end=now
    )
    assert series.source == "promql" and series.points
    assert [p.mean for p in series.points] == pytest.approx([0.55] * len(series.points))
    agg = read.window_aggregate(
        metric=UTIL,
        cluster_id=cluster.id,
        entity_kind="accelerator",
        entity_key="GPU-aaa",
        aggregation="p95",
        start=now - timedelta(seconds=30),
        end=now,
    )
    assert agg.value == pytest.approx(0.87) and agg.samples >= 4

    # Alert rules: every card of the kind; top-N by mean.
    rule = SimpleNamespace(pk=0, entity_kind="accelerator", aggregation="max", window_seconds=60)
    values = read.window_values(rule=rule, metric=metric, now=now).values
    assert values[ids["GPU-bbb"]] == pytest.approx(0.12)
    assert values[ids["VD-0"]] == pytest.approx(0.55)
    top = read.top_entities(metric=metric, cluster_id=cluster.id, since=now - timedelta(minutes=1))
    assert [key for key, _ in top] == ["GPU-aaa", "VD-1", "VD-0", "GPU-bbb"]

    # The accelerators API: each card's entity key and its latest values.
    client = APIClient()
    client.credentials(
        HTTP_AUTHORIZATION=f"Bearer {token_create(name='g', scopes=['read']).plaintext}"
    )
    rows = client.get("/api/v1/accelerators/?cluster=thanos-a").json()["results"]
    by_key = {row["entity"]: row for row in rows}
    assert by_key["GPU-aaa"]["latest"][UTIL] == pytest.approx(0.87)
    assert by_key["VD-0"]["vendor_id"] == "VD-0"
    assert Accelerator.objects.filter(node__cluster=cluster).count() == 4

    assert not Sample.objects.exists()  # nothing was copied into the store


def _silent_server() -> tuple[socket.socket, int]:
    """Accepts connections and never answers: a hung query server."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    held = []
    threading.Thread(
        target=lambda: [held.append(sock.accept()) for _ in range(8)], daemon=True
    ).start()
    return sock, sock.getsockname()[1]


@pytest.mark.parametrize("failure", ["down", "slow", "error"])
def test_a_down_slow_or_failing_server_is_data_source_unavailable(
    failure, db, client_as, prometheus_required
):
    catalogue_sync()
    cluster = Cluster.objects.create(name="thanos-b", kind=Cluster.Kind.UNIFIED)
    sock = None
    if failure == "down":
        url = f"http://127.0.0.1:{free_port()}"
    elif failure == "slow":
        sock, port = _silent_server()
        url = f"http://127.0.0.1:{port}"
    else:
        url = "http://127.0.0.1:1/nothing"
    PromQLDataSource.objects.create(cluster=cluster, url=url, timeout_seconds=0.5)
    try:
        started = time.monotonic()
        with pytest.raises(read.DataSourceUnavailable) as caught:
            read.latest_kind(cluster.id, "accelerator", [UTIL])
        assert time.monotonic() - started < 5
        assert "thanos-b" in str(caught.value)
        operator = client_as("operator")
        api = operator.get(reverse("api:dashboard-hardware"), {"cluster": cluster.name})
        assert api.status_code == 503, api.content
        assert api.json()["code"] == "data_source_unavailable"
        assert "Data source unavailable for cluster thanos-b" in api.json()["detail"]
        source = PromQLDataSource.objects.get(cluster=cluster)
        assert source.last_error and source.last_error_at
        exporters_page = operator.get("/exporters/")
        assert "data source unavailable" in exporters_page.content.decode()
    finally:
        if sock is not None:
            sock.close()


def _capture_utilization() -> list[float]:
    import re

    from tests.telemetry.prometheus_fixtures import DCGM_TEXT, NpuExporter

    text = DCGM_TEXT + NpuExporter()()
    found = re.findall(
        r"^(?:DCGM_FI_DEV_GPU_UTIL|npu_chip_info_utilization){[^}]*} (\d+)", text, flags=re.M
    )
    return [float(v) / 100 for v in found]


def test_window_reads_and_fleet_figures_come_from_the_promql_server(promql_cluster):
    cluster = promql_cluster
    util = _capture_utilization()
    busy = sum(util) / len(util)
    end = datetime.now(tz=UTC)
    start = end - timedelta(minutes=1)

    values, sources = read.cluster_figures_latest(
        cluster, ["cluster_cards_total", "cluster_utilization_busy_ratio"]
    )
    assert values["cluster_cards_total"] == len(util)
    assert values["cluster_utilization_busy_ratio"] == pytest.approx(busy)
    assert set(sources.values()) == {"promql"}

    series = read.cluster_series(cluster, "cluster_utilization_busy_ratio", start, end)
    assert series is not None and series.source == "promql" and series.points
    assert all(p.mean == pytest.approx(busy) for p in series.points)
    stat = read.cluster_stat(cluster, "cluster_utilization_busy_ratio", start, end)
    assert stat is not None and stat.mean == pytest.approx(busy)
    first, last = read.data_span(cluster, start, end)
    assert start <= first <= last <= end

    sums = read.entity_sums(
        cluster=cluster, metric_name=UTIL, kind="accelerator", start=start, end=end
    )
    cards = dict(
        Entity.objects.filter(cluster=cluster, kind="accelerator").values_list("id", "key")
    )
    assert set(sums) == set(cards)
    assert sum(total / n for total, n in sums.values()) == pytest.approx(sum(util))

    metric = MetricDefinition.objects.get(name=UTIL)
    by_cluster = read.aggregate_by(
        metric=metric, cluster_id=cluster.pk, since=start, group="cluster"
    )
    assert by_cluster == {cluster.name: pytest.approx(busy)}
    assert not Sample.objects.filter(entity__cluster=cluster).exists()  # nothing copied
