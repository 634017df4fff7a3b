"""A real Debian Prometheus scrapes a vLLM-format ``/metrics`` and remote-writes it to a live
portal (issue 23 part 1): the window's TTFT/TPOT P99 computed from the stored buckets is the
one the same Prometheus answers as a PromQL source, ``histogram_quantile(0.99, sum by (le)
(rate(vllm:time_to_first_token_seconds_bucket{…}[w])))``."""

from __future__ import annotations

import itertools
import threading
import time
from datetime import UTC, datetime

import pytest

from accounts.services.tokens import token_create
from inventory.models import Cluster
from telemetry.models import Entity, PromQLDataSource, Sample
from telemetry.read import serving_window
from telemetry.receivers.twin import catalogue_sync
from tests.servers import ExporterFixture, PrometheusServer, WebServer
from tests.serving_exposition import EngineMetrics
from tests.telemetry.prometheus_fixtures import remote_write_config
from tests.workers import database_url_for_subprocess

pytestmark = [pytest.mark.slow]
# A fixed cycle of latencies, so every bucket grows at a steady rate from before the window
# (Prometheus' rate() extrapolates each bucket by the same factor: the quantile is unchanged).
TTFT_CYCLE = (0.03, 0.07, 0.09, 0.2, 0.3, 0.45, 0.6, 0.9, 1.2, 3.0)
TPOT_CYCLE = (0.02, 0.03, 0.04, 0.06, 0.08, 0.12)


def wait_until(predicate, timeout: float, what: str, context=lambda: "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; {context()}")


@pytest.mark.django_db(transaction=True)
def test_stored_buckets_and_the_promql_source_give_the_same_p99(
    tmp_path, prometheus_required, settings
):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    catalogue_sync()
    Cluster.objects.create(name="vllm-live", kind=Cluster.Kind.UNIFIED)
    read_back = Cluster.objects.create(name="vllm-promql", kind=Cluster.Kind.UNIFIED)
    engine = EngineMetrics()
    lock = threading.Lock()
    stop = threading.Event()

    def page() -> str:
        with lock:
            return engine.text()

    def traffic() -> None:
        ttft, tpot = itertools.cycle(TTFT_CYCLE), itertools.cycle(TPOT_CYCLE)
        while not stop.is_set():
            with lock:
                for i in range(30):
                    engine.request(ttft=next(ttft), tpot=next(tpot), ok=i != 0)
            time.sleep(0.1)

    exporter = ExporterFixture({"/metrics": page})
    token = token_create(name="prometheus", scopes=["ingest"]).plaintext
    web = WebServer(
        env={"DATABASE_URL": database_url_for_subprocess(), "PORTAL_VAR_DIR": str(tmp_path)},
        workers=1,
    )
    url = f"{web.url}/api/v1/telemetry/remote-write/?cluster=vllm-live"
    config = f"""
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: vllm
    static_configs:
      - targets: ["127.0.0.1:{exporter.port}"]
""" + remote_write_config(url, token)
    prometheus = PrometheusServer(tmp_path / "prometheus", config)
    feeder = threading.Thread(target=traffic, daemon=True)
    key = f"llama-3-8b@127.0.0.1:{exporter.port}"
    try:
        feeder.start()
        prometheus.start()
        time.sleep(12)  # counters grow well before the window
        start = datetime.now(tz=UTC)
        time.sleep(10.5)
        end = datetime.now(tz=UTC)
        # Everything scraped before the window's end has arrived through remote-write
        wait_until(
            lambda: Sample.objects.filter(
                entity__key=key, metric__name="serving_ttft_seconds_count", ts__gt=end
            ).exists(),
            60,
            "remote-written samples past the window",
            lambda: web.output[-2000:] + prometheus.log.read_text()[-2000:],
        )
        stored = serving_window(
            cluster_id=Cluster.objects.get(name="vllm-live").pk,
            endpoint_keys=[key],
            start=start,
            end=end,
        )
        PromQLDataSource.objects.create(cluster=read_back, url=prometheus.url)
        queried = serving_window(cluster_id=read_back.pk, endpoint_keys=[key], start=start, end=end)
    finally:
        stop.set()
        prometheus.stop()
        web.stop()
        exporter.stop()

    assert Entity.objects.filter(kind="serving_endpoint", key=key).exists()
    assert stored.scrapes >= 8 and stored.requests > 0
    for figure in ("p50", "p99"):
        assert stored.ttft[figure] == pytest.approx(queried.ttft[figure], rel=1e-6), figure
        assert stored.tpot[figure] == pytest.approx(queried.tpot[figure], rel=1e-6), figure
    assert stored.ttft["p99"] > 2.5  # the 3 s observations decide the tail: (2.5, 5] bucket
    # Scale-free figures agree too; counts differ only by rate()'s extrapolation.
    assert stored.error_ratio == pytest.approx(queried.error_ratio, rel=1e-3)
