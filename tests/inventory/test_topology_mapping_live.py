"""A real Prometheus relabels a Kubernetes node's topology label into ``rack`` and
remote-writes to a live portal: with the cluster's label mapping, exporter-registered nodes
land in their racks (so the hardware heatmaps have racks)."""

from __future__ import annotations

import time

import pytest

from accounts.services.tokens import token_create
from inventory.models import Cluster, Node, TopologyMapping
from telemetry.models import Entity
from telemetry.receivers.twin import catalogue_sync
from tests.servers import PrometheusServer, WebServer
from tests.telemetry.prometheus_fixtures import remote_write_config
from tests.workers import database_url_for_subprocess

pytestmark = [pytest.mark.slow]
ZONE = "__meta_kubernetes_node_label_topology_kubernetes_io_zone"


def scrape_config(port: int) -> str:
    """What a Kubernetes user writes: the node's topology label (here a static meta label, as
    service discovery would provide it) relabelled into ``rack``."""
    target = f"127.0.0.1:{port}"
    relabel = f"""    relabel_configs:
      - source_labels: [{ZONE}]
        target_label: rack
"""
    return f"""
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: dcgm
    metrics_path: /dcgm
    static_configs:
      - targets: ["{target}"]
        labels:
          {ZONE}: r07
{relabel}  - job_name: npu
    metrics_path: /npu
    static_configs:
      - targets: ["{target}"]
        labels:
          hostname: atlas-07
          {ZONE}: r08
{relabel}"""


def placed() -> dict[str, str | None]:
    return {
        n.hostname: (n.rack.name if n.rack else None)
        for n in Node.objects.select_related("rack").filter(cluster__name="prom-racks")
    }


@pytest.mark.django_db(transaction=True)
def test_relabelled_rack_labels_place_remote_written_nodes_in_racks(
    tmp_path, prometheus_required, exporters
):
    catalogue_sync()
    cluster = Cluster.objects.create(name="prom-racks", kind=Cluster.Kind.UNIFIED)
    TopologyMapping.objects.create(cluster=cluster, rack_label="rack")
    token = token_create(name="prometheus", scopes=["ingest"]).plaintext
    web = WebServer(
        env={"DATABASE_URL": database_url_for_subprocess(), "PORTAL_VAR_DIR": str(tmp_path)},
        workers=1,
    )
    url = f"{web.url}/api/v1/telemetry/remote-write/?cluster=prom-racks"
    prometheus = PrometheusServer(
        tmp_path / "prometheus", scrape_config(exporters.port) + remote_write_config(url, token)
    )
    try:
        prometheus.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and placed() != {"dgx-01": "r07", "atlas-07": "r08"}:
            time.sleep(0.25)
    finally:
        prometheus.stop()
        web.stop()
    assert placed() == {"dgx-01": "r07", "atlas-07": "r08"}, web.output[-2000:]
    # Every card entity carries its node's rack: the heatmaps' rack rows are filled.
    cards = Entity.objects.filter(cluster=cluster, accelerator__isnull=False)
    assert cards.count() == 4
    assert all(e.rack_id == e.node.rack_id for e in cards.select_related("node"))
