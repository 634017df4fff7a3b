"""PromQL parity (issue 31 §6): the same exporter capture, once scraped into the store and once
read through a real Prometheus as a cluster's PromQL data source, gives the same card health,
the same last-seen (so the same absent cards) and the same open health alerts."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from alerts.defaults import alert_rules_ensure
from alerts.evaluate import alerts_evaluate
from alerts.models import Alert
from inventory.models import Accelerator, Cluster
from telemetry.models import ExporterTarget, PromQLDataSource
from telemetry.read import accelerators_absent_q
from telemetry.receivers.promql_sync import promql_source_sync
from telemetry.receivers.scrape import exporter_scrape
from telemetry.receivers.twin import catalogue_sync
from tests.servers import ExporterFixture, PrometheusServer
from tests.telemetry.prometheus_fixtures import scrape_config
from tests.telemetry.test_promql_attribution import _wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db]
H100 = 'modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-07"'
XID = {"GPU-p0": 0, "GPU-p1": 79, "GPU-p2": 0}  # XID 79: the GPU fell off the bus


def _dcgm() -> str:
    rows = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge", "# TYPE DCGM_FI_DEV_XID_ERRORS gauge"]
    for gpu, (uuid, xid) in enumerate(XID.items()):
        rows.append(f'DCGM_FI_DEV_GPU_UTIL{{gpu="{gpu}",UUID="{uuid}",{H100}}} 60')
        rows.append(f'DCGM_FI_DEV_XID_ERRORS{{gpu="{gpu}",UUID="{uuid}",{H100}}} {xid}')
    return "\n".join(rows) + "\n"


@pytest.fixture(autouse=True)
def loopback_allowed(settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]


@pytest.fixture
def both(tmp_path, prometheus_required):
    fixture = ExporterFixture({"/dcgm": _dcgm, "/npu": lambda: ""})
    server = PrometheusServer(tmp_path / "prometheus", scrape_config(fixture)).start()
    _wait_for(server, 'count_over_time({__name__="DCGM_FI_DEV_XID_ERRORS"}[1m])', 4)
    catalogue_sync()
    alert_rules_ensure()
    stored = Cluster.objects.create(name="parity-store", kind=Cluster.Kind.UNIFIED)
    read = Cluster.objects.create(name="parity-promql", kind=Cluster.Kind.UNIFIED)
    target = ExporterTarget.objects.create(
        name="parity-dcgm", url=f"http://127.0.0.1:{fixture.port}/dcgm", kind="dcgm", cluster=stored
    )
    source = PromQLDataSource.objects.create(cluster=read, url=server.url)
    try:
        yield stored, read, target, source
    finally:
        server.stop()
        fixture.stop()


def _cards(cluster: Cluster) -> dict[str, tuple[int, bool]]:
    rows = Accelerator.objects.filter(node__cluster=cluster)
    return {a.vendor_id: (a.health, a.last_seen is not None) for a in rows}


def test_health_last_seen_absence_and_alerts_match_between_the_store_and_promql(both):
    stored, read, target, source = both
    assert exporter_scrape(target=target)["ok"]
    result = promql_source_sync(source=source)
    assert result.cards == 3
    store_cards, promql_cards = _cards(stored), _cards(read)
    assert len(store_cards) == 3 and store_cards == promql_cards
    healths = sorted(h for h, _ in store_cards.values())
    assert healths == sorted([Accelerator.Health.HEALTHY] * 2 + [Accelerator.Health.UNHEALTHY])
    assert all(seen for _, seen in promql_cards.values())  # not null: absence can be read
    now = datetime.now(tz=UTC)
    absent = Accelerator.objects.filter(accelerators_absent_q(now=now))
    assert absent.filter(node__cluster=stored).count() == 0
    assert absent.filter(node__cluster=read).count() == 0
    alerts_evaluate(now=now)
    firing = {
        cluster.name: sorted(
            Alert.objects.filter(
                rule__name="accelerator-unhealthy", entity__cluster=cluster
            ).values_list("entity__key", flat=True)
        )
        for cluster in (stored, read)
    }
    assert firing["parity-store"] == firing["parity-promql"] == ["GPU-p1"]
