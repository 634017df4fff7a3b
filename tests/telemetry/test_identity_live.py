"""A real Prometheus (Debian's) scrapes exporters shaped like public captures and
remote-writes to a live portal (gunicorn, two workers): three npu-exporters behind one address
are 24 cards, not 8; two MIG slices of one GPU used by two tenants stay two entities; a chip
whose host changes is moved, not duplicated; an exporter that stops makes its cards absent and
alert; a misspelled cluster is refused and counted on /metrics whichever worker answered."""

from __future__ import annotations

import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from accounts.services.tokens import token_create
from alerts.defaults import alert_rules_ensure
from alerts.evaluate import alerts_evaluate
from alerts.models import Alert
from inventory.models import Accelerator, AcceleratorMove, Cluster
from telemetry.models import Entity, IngestRefusal, Sample
from telemetry.receivers.twin import catalogue_sync
from tests.servers import ExporterFixture, PrometheusServer, WebServer
from tests.telemetry.exporter_captures import A100, NpuExporterCard, dcgm_mig_text
from tests.telemetry.prometheus_fixtures import remote_write_config
from tests.workers import database_url_for_subprocess

pytestmark = [pytest.mark.slow]


def wait_until(predicate, timeout: float, what: str, context=lambda: "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; {context()}")


def scrape_config(npus: list[ExporterFixture], dcgm: ExporterFixture) -> str:
    """npu-exporter names no host and this config adds none: Prometheus' ``instance``
    (127.0.0.1:<port>) is all there is, the same address for the three exporters."""
    targets = ", ".join(f'"127.0.0.1:{e.port}"' for e in npus)
    return f"""
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1m
scrape_configs:
  - job_name: npu
    metrics_path: /npu
    static_configs:
      - targets: [{targets}]
  - job_name: dcgm
    metrics_path: /dcgm
    static_configs:
      - targets: ["127.0.0.1:{dcgm.port}"]
"""


@pytest.mark.django_db(transaction=True)
def test_identity_through_a_real_prometheus(tmp_path, prometheus_required):
    catalogue_sync()
    alert_rules_ensure()
    cluster = Cluster.objects.create(
        name="real-a",
        kind=Cluster.Kind.UNIFIED,
        scrape_interval_seconds=1,
        absent_after_intervals=3,
    )
    token = token_create(name="prometheus", scopes=["ingest"]).plaintext
    reader = token_create(name="grafana", scopes=["read"]).plaintext
    npus = [
        ExporterFixture({"/npu": NpuExporterCard(f"SN{n}", util=10 * (n + 1))}) for n in range(3)
    ]
    host = {"name": "dgx-a100-01"}
    dcgm = ExporterFixture({"/dcgm": lambda: dcgm_mig_text(hostname=host["name"])})
    web = WebServer(
        env={"DATABASE_URL": database_url_for_subprocess(), "PORTAL_VAR_DIR": str(tmp_path)},
        workers=2,
    )
    base = f"{web.url}/api/v1/telemetry/remote-write/"
    config = (
        scrape_config(npus, dcgm)
        + remote_write_config(f"{base}?cluster=real-a", token)
        + remote_write_config(f"{base}?cluster=real-b", token).replace("remote_write:\n", "")
    )
    prometheus = PrometheusServer(tmp_path / "prometheus", config)
    cards = Accelerator.objects.filter(node__cluster=cluster)

    def context() -> str:
        return f"portal: {web.output[-2000:]}; prometheus: {prometheus.log.read_text()[-2000:]}"

    try:
        prometheus.start()
        wait_until(
            lambda: (
                cards.filter(vendor_id__startswith="SN").count() == 24
                and cards.filter(parent__isnull=False).count() == 2
            ),
            60,
            "24 NPU chips and 2 MIG slices",
            context,
        )
        wait_until(
            lambda: sum(IngestRefusal.objects.values_list("count", flat=True)) >= 4,
            30,
            "refused requests of the misspelled cluster",
            context,
        )

        # The GPU's exporter now reports another host: a move, not new cards.
        host["name"] = "dgx-a100-02"
        wait_until(
            lambda: AcceleratorMove.objects.filter(to_hostname="dgx-a100-02").count() == 3,
            30,
            "the GPU and its slices moved",
            context,
        )

        # One npu-exporter stops: its 8 chips go absent and alert; the others do not.
        npus[2].stop()
        time.sleep(4)  # > 3 intervals of 1 s
        alerts_evaluate()
        metrics_text = _get(f"{web.url}/metrics", reader)
    finally:
        prometheus.stop()
        web.stop()
        dcgm.stop()
        for exporter in npus[:2]:
            exporter.stop()

    # 24 cards on one node (the address), each its own entity and series.
    npu_cards = cards.filter(vendor_id__startswith="SN")
    assert set(npu_cards.values_list("node__hostname", flat=True)) == {"127.0.0.1"}
    assert Entity.objects.filter(cluster=cluster, key__startswith="SN").count() == 24
    values = Sample.objects.filter(entity__key="SN1-3").values_list("value", flat=True)
    assert {round(v, 6) for v in values} == {0.23}  # exporter 1 chip 3, never another's

    # MIG: one GPU, two slices with their profile and GI, each with its own memory.
    gpu = Accelerator.objects.get(vendor_id=A100)
    assert {(s.mig_profile, s.gpu_instance_id) for s in gpu.slices.all()} == {
        ("3g.40gb", 1),
        ("4g.40gb", 2),
    }
    used = dict(
        Sample.objects.filter(metric__name="accelerator_hbm_used_bytes").values_list(
            "entity__key", "value"
        )
    )
    assert used[f"{A100}/gi1"] == 39000 * 2**20 and used[f"{A100}/gi2"] == 1200 * 2**20
    assert set(Accelerator.objects.filter(vendor_id__startswith=A100).values_list("health")) == {
        (1,)
    }

    # The move: same three cards, now on the new host, their history kept.
    assert cards.filter(vendor_id__startswith=A100).count() == 3
    assert set(
        cards.filter(vendor_id__startswith=A100).values_list("node__hostname", flat=True)
    ) == {"dgx-a100-02"}

    # Absence: exactly the stopped exporter's chips alert.
    absent = Alert.objects.filter(rule__name="accelerator-absent", state=Alert.State.FIRING)
    assert {a.entity.key for a in absent} == {f"SN2-{chip}" for chip in range(8)}

    # Refusals: counted in the database whichever worker answered, on /metrics.
    families = {f.name: f for f in text_string_to_metric_families(metrics_text)}
    refused = {
        (s.labels["cluster"], s.labels["reason"], s.labels["unit"]): s.value
        for s in families["portal_ingest_refused"].samples
        if s.name == "portal_ingest_refused_total"
    }
    assert refused[("", "unknown_cluster", "requests")] >= 4
    states = {
        s.labels["health"]: s.value
        for s in families["portal_accelerators"].samples
        if s.labels["cluster"] == "real-a"
    }
    assert states["absent"] == 8
    print(f"refused: {refused}; states: {states}")


def _get(url: str, token: str) -> str:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read().decode()
