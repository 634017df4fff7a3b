"""A real Prometheus scrapes fixture exporters and remote-writes to a live portal (gunicorn on
the test database): cards, hosts, values and timestamps arrive as the text path stores them,
and a Prometheus restart (WAL replay, resends) stores no point twice."""

from __future__ import annotations

import time

import pytest
from django.db.models import Count

from accounts.services.tokens import token_create
from inventory.models import Accelerator, Cluster, Node
from telemetry.models import RemoteWriteStatus, Sample
from telemetry.receivers.twin import catalogue_sync
from tests.servers import PrometheusServer, WebServer
from tests.telemetry.prometheus_fixtures import remote_write_config, scrape_config
from tests.workers import database_url_for_subprocess

pytestmark = [pytest.mark.slow]
CARDS = {"GPU-aaa", "GPU-bbb", "VD-0", "VD-1"}


def wait_until(predicate, timeout: float, what: str, context=lambda: "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; {context()}")


def util_points() -> dict[str, int]:
    rows = (
        Sample.objects.filter(metric__name="accelerator_utilization_ratio")
        .values_list("entity__key")
        .annotate(n=Count("id"))
    )
    return dict(rows)


@pytest.mark.django_db(transaction=True)
def test_prometheus_remote_write_lands_once_across_a_restart(
    tmp_path, prometheus_required, exporters
):
    catalogue_sync()
    cluster = Cluster.objects.create(name="prom-live", kind=Cluster.Kind.UNIFIED)
    token = token_create(name="prometheus", scopes=["ingest"]).plaintext
    web = WebServer(
        env={"DATABASE_URL": database_url_for_subprocess(), "PORTAL_VAR_DIR": str(tmp_path)},
        workers=1,
    )
    url = f"{web.url}/api/v1/telemetry/remote-write/?cluster=prom-live"
    prometheus = PrometheusServer(
        tmp_path / "prometheus", scrape_config(exporters) + remote_write_config(url, token)
    )
    started = time.time()

    def context() -> str:
        return (
            f"points {util_points()}; portal: {web.output[-2000:]}; "
            + (prometheus.log.read_text()[-2000:])
        )

    try:
        prometheus.start()
        wait_until(
            lambda: set(util_points()) == CARDS and min(util_points().values()) >= 3,
            60,
            "three utilisation points per card",
            context,
        )
        prometheus.stop()
        time.sleep(0.5)
        before = set(Sample.objects.values_list("metric_id", "entity_id", "ts", "value"))
        requests_before = RemoteWriteStatus.objects.get(cluster=cluster).requests
        prometheus.start()  # same TSDB: the WAL is replayed and the queue resumes
        wait_until(
            lambda: (
                min(util_points().values()) >= 6
                and RemoteWriteStatus.objects.get(cluster=cluster).requests > requests_before + 2
            ),
            60,
            "more points after the restart",
            context,
        )
        prometheus.stop()
    finally:
        prometheus.stop()
        web.stop()

    # Hosts and cards as the exporters name them (npu-exporter's host from the target label).
    assert set(Node.objects.filter(cluster=cluster).values_list("hostname", flat=True)) == {
        "dgx-01",
        "atlas-07",
    }
    assert set(
        Accelerator.objects.filter(node__cluster=cluster).values_list("node__hostname", "vendor_id")
    ) == {("dgx-01", "GPU-aaa"), ("dgx-01", "GPU-bbb"), ("atlas-07", "VD-0"), ("atlas-07", "VD-1")}
    assert Accelerator.objects.get(vendor_id="VD-1").health == 0

    def values(metric: str, key: str) -> set[float]:
        return set(
            Sample.objects.filter(metric__name=metric, entity__key=key).values_list(
                "value", flat=True
            )
        )

    assert values("accelerator_utilization_ratio", "GPU-aaa") == {0.87}
    assert values("accelerator_utilization_ratio", "VD-1") == {0.66}
    assert values("accelerator_hbm_total_bytes", "GPU-bbb") == {81920 * 2**20}
    assert values("accelerator_temperature_celsius", "VD-1") == set()  # -1: failed
    assert values("accelerator_power_watts", "GPU-bbb") == set()  # DCGM blank sentinel
    assert values("node_accelerators", "atlas-07") == {8.0}

    # Timestamps: npu-exporter's own milliseconds; dcgm's the scrape time.
    npu_ts = {
        round(ts.timestamp() * 1000)
        for ts in Sample.objects.filter(
            metric__name="accelerator_utilization_ratio", entity__key="VD-0"
        ).values_list("ts", flat=True)
    }
    assert npu_ts <= set(exporters.npu.served_ms)
    dcgm_ts = [
        ts.timestamp()
        for ts in Sample.objects.filter(entity__key="GPU-aaa").values_list("ts", flat=True)
    ]
    assert all(started - 1 <= ts <= time.time() for ts in dcgm_ts)

    # Nothing twice: what was stored before the restart is still there once, and every point
    # is unique per (metric, entity, time) although Prometheus resent after its restart.
    after = list(Sample.objects.values_list("metric_id", "entity_id", "ts", "value"))
    assert before <= set(after)
    assert len(after) == len({(m, e, t) for m, e, t, _ in after})
    status = RemoteWriteStatus.objects.get(cluster=cluster)
    assert status.rejected == 0 and status.inserted == len(after)
    print(
        f"remote-write: {status.requests} requests, {status.samples} samples, "
        f"{status.inserted} inserted, {status.duplicates} resent duplicates"
    )
