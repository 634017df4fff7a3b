"""Fixture exporters (dcgm-exporter and npu-exporter text) and Prometheus configs for the tests
that run Debian's real ``prometheus`` binary."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import pytest

from telemetry.read.promql.client import PromQLClient
from tests.servers import (
    ExporterFixture,
    PrometheusServer,
    VictoriaMetricsServer,
    prometheus_binary,
    victoria_metrics_binary,
)

DCGM_TEXT = """# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-aaa",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-01"} 87
DCGM_FI_DEV_GPU_UTIL{gpu="1", UUID="GPU-bbb", device="nvidia1", modelName="NVIDIA H100 80GB HBM3", Hostname="dgx-01"} 12
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-aaa",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-01"} 40960
DCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-bbb",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-01"} 1024
# TYPE DCGM_FI_DEV_FB_FREE gauge
DCGM_FI_DEV_FB_FREE{gpu="0",UUID="GPU-aaa",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-01"} 40960
DCGM_FI_DEV_FB_FREE{gpu="1",UUID="GPU-bbb",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-01"} 80896
# TYPE DCGM_FI_DEV_GPU_TEMP gauge
DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-aaa",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-01"} 71
DCGM_FI_DEV_GPU_TEMP{gpu="1",UUID="GPU-bbb",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-01"} 45
# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{gpu="1",UUID="GPU-bbb",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-01"} 9223372036854775794
"""


class NpuExporter:
    """npu-exporter text stamped with the time of each request, in milliseconds."""

    def __init__(self) -> None:
        self.served_ms: list[int] = []

    def __call__(self) -> str:
        now_ms = int(time.time() * 1000)
        self.served_ms.append(now_ms)
        rows = [
            "# TYPE npu_chip_info_utilization gauge",
            f'npu_chip_info_utilization{{id="0",model_name="Ascend910B",vdie_id="VD-0"}} 55 {now_ms}',
            f'npu_chip_info_utilization{{id="1",model_name="Ascend910B",vdie_id="VD-1"}} 66 {now_ms}',
            "# TYPE npu_chip_info_health_status gauge",
            f'npu_chip_info_health_status{{id="0",model_name="Ascend910B",vdie_id="VD-0"}} 1 {now_ms}',
            f'npu_chip_info_health_status{{id="1",model_name="Ascend910B",vdie_id="VD-1"}} 0 {now_ms}',
            "# TYPE npu_chip_info_temperature gauge",
            f'npu_chip_info_temperature{{id="0",model_name="Ascend910B",vdie_id="VD-0"}} 60 {now_ms}',
            f'npu_chip_info_temperature{{id="1",model_name="Ascend910B",vdie_id="VD-1"}} -1 {now_ms}',
            "# TYPE npu_chip_info_hbm_used_memory gauge",
            f'npu_chip_info_hbm_used_memory{{id="0",model_name="Ascend910B",vdie_id="VD-0"}} 32768 {now_ms}',
            "# TYPE machine_npu_nums gauge",
            f"machine_npu_nums 8 {now_ms}",
        ]
        return "\n".join(rows) + "\n"


def scrape_config(exporters: ExporterFixture, interval: str = "1s") -> str:
    """Two jobs; npu-exporter names no host, so the target carries a ``hostname`` label as a
    Prometheus user would set with static labels or relabelling."""
    target = f"127.0.0.1:{exporters.port}"
    return f"""
global:
  scrape_interval: {interval}
  scrape_timeout: {interval}
  evaluation_interval: 1m
scrape_configs:
  - job_name: dcgm
    metrics_path: /dcgm
    static_configs:
      - targets: ["{target}"]
  - job_name: npu
    metrics_path: /npu
    static_configs:
      - targets: ["{target}"]
        labels:
          hostname: atlas-07
"""


def remote_write_config(url: str, token: str) -> str:
    return f"""
remote_write:
  - url: "{url}"
    authorization:
      type: Bearer
      credentials: "{token}"
    remote_timeout: 10s
    metadata_config:
      send: false
    queue_config:
      batch_send_deadline: 1s
      min_backoff: 100ms
      max_backoff: 1s
      max_shards: 2
"""


@pytest.fixture
def prometheus_required():
    if prometheus_binary() is None:
        pytest.skip(
            "prometheus is not installed (Debian package `prometheus`; `make test` installs it "
            "when run as root with apt)"
        )


@pytest.fixture
def exporters():
    npu = NpuExporter()
    server = ExporterFixture({"/dcgm": lambda: DCGM_TEXT, "/npu": npu})
    server.npu = npu
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def victoria_metrics(tmp_path, settings):
    """A real VictoriaMetrics on loopback (allowed by the outbound policy for the test)."""
    if victoria_metrics_binary() is None:
        pytest.skip(
            "victoria-metrics is not installed (Debian package `victoria-metrics`; "
            "`make test` installs it when run as root with apt)"
        )
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    server = VictoriaMetricsServer(tmp_path / "victoria-metrics").start()
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def query_engine(kind: str, tmp_path, exporters: ExporterFixture) -> Iterator:
    """The query engine a cluster's PromQL source points at, holding ``exporters``' scrapes:
    Prometheus itself (``kind="prometheus"``), or a VictoriaMetrics that Prometheus
    remote-writes its scrapes into (``"victoria-metrics"``; Debian's packages both). Yields
    the engine once it answers every card's utilisation; stops both by PID."""
    engine = None
    config = scrape_config(exporters)
    if kind == "victoria-metrics":
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
