"""Rack heatmaps from the per-rack recording rules (issue 33 §3) on a real VictoriaMetrics, the
rules evaluated by Debian's ``vmalert`` in replay mode: with the portal's placement scraped
from ``/metrics/topology``, the server's per-rack sums give every rack the same cards, sums
and health as the per-host answers placed by the portal, hosts it does not place under "no
rack"; without the placement the page reads the per-host records, not a wrong rack."""

from __future__ import annotations

import shutil
import time

import pytest
from rest_framework.test import APIClient

from accounts.services.tokens import token_create
from inventory.models import Cluster, Node, Rack, Supernode
from telemetry import read
from telemetry.catalogue.entities import entities_path_sync
from telemetry.models import PromQLDataSource
from telemetry.read.fleet import HEALTH, SOURCE_PROMQL, SOURCE_PROMQL_RULES
from telemetry.read.promql.rules import INTERVAL, RULES_FILE
from telemetry.read.racks import SOURCE_PROMQL_RULES_RACKS
from telemetry.receivers.promql_sync import promql_source_sync
from telemetry.receivers.twin import catalogue_sync
from tests.telemetry.prometheus_fixtures import victoria_metrics  # noqa: F401 - fixture

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db,
    pytest.mark.skipif(shutil.which("vmalert") is None, reason="vmalert is not installed"),
]
DCGM_HOSTS, GPUS = ("rr0", "rr1", "rr2", "loose"), 4
NPU_HOST = "npu0"  # named by the ``node`` label, not ``Hostname``
PLACEMENT = {"rr0": "r0", "rr1": "r0", "rr2": "r1", NPU_HOST: "r1"}  # "loose": no rack
NAMES = [
    "accelerator_utilization_ratio",
    "accelerator_temperature_celsius",
    "accelerator_hbm_used_bytes",
    "accelerator_hbm_total_bytes",
    "accelerator_power_watts",
    HEALTH,
]
SCRAPES = 3


def _times(now: float) -> list[int]:
    return [int((now - (SCRAPES - 1 - i) * 30) * 1000) for i in range(SCRAPES)]


def _fleet(now: float) -> str:
    lines = []
    for at_ms in _times(now):
        for h, host in enumerate(DCGM_HOSTS):
            for g in range(GPUS):
                labels = f'gpu="{g}",UUID="GPU-{host}-{g}",Hostname="{host}",modelName="H100"'
                xid = 79 if (host, g) == ("rr1", 2) else 0
                lines += [
                    f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} {10 * g + h} {at_ms}",
                    f"DCGM_FI_DEV_GPU_TEMP{{{labels}}} {40 + g + 5 * h} {at_ms}",
                    f"DCGM_FI_DEV_FB_USED{{{labels}}} {1000 * (g + 1)} {at_ms}",
                    f"DCGM_FI_DEV_FB_FREE{{{labels}}} {80000 - 1000 * g} {at_ms}",
                    f"DCGM_FI_DEV_POWER_USAGE{{{labels}}} {300 + g} {at_ms}",
                    f"DCGM_FI_DEV_XID_ERRORS{{{labels}}} {xid} {at_ms}",
                ]
        for chip in range(2):
            labels = f'id="{chip}",model_name="Ascend910B",vdie_id="VD-{chip}",node="{NPU_HOST}"'
            lines += [
                f"npu_chip_info_utilization{{{labels}}} {50 + chip} {at_ms}",
                f"npu_chip_info_temperature{{{labels}}} {60 + chip} {at_ms}",
                f"npu_chip_info_health_status{{{labels}}} {chip} {at_ms}",  # chip 0 unhealthy
            ]
    return "\n".join(lines) + "\n"


def _placed_cluster(url: str) -> Cluster:
    cluster = Cluster.objects.create(name="racks-rules", kind=Cluster.Kind.UNIFIED)
    source = PromQLDataSource.objects.create(cluster=cluster, url=url)
    assert promql_source_sync(source=source).cards == len(DCGM_HOSTS) * GPUS + 2
    supernode = Supernode.objects.create(cluster=cluster, name="sn0")
    racks = {name: Rack.objects.create(supernode=supernode, name=name) for name in ("r0", "r1")}
    for host, rack in PLACEMENT.items():
        Node.objects.filter(cluster=cluster, hostname=host).update(rack=racks[rack])
    nodes = Node.objects.filter(cluster=cluster).values_list("pk", flat=True)
    entities_path_sync(cluster=cluster, node_ids=list(nodes))
    return cluster


def _topology_scraped(server, now: float) -> None:
    """``/metrics/topology`` as Prometheus would have scraped it at the fleet's scrapes."""
    client = APIClient()
    token = token_create(name="topology-scraper", scopes=["read"]).plaintext
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    answer = client.get("/metrics/topology")
    assert answer.status_code == 200
    series = [line for line in answer.content.decode().splitlines() if line[:1] not in "#"]
    assert len(series) == len(PLACEMENT)
    server.import_text("".join(f"{line} {at}\n" for at in _times(now) for line in series))


def _figures(agg, name: str) -> tuple:
    """Cards and sum; the count of ones is a health figure (the rules count it for health)."""
    return (agg.cards, round(agg.total, 6)) + ((agg.ones,) if name == HEALTH else ())


def _live(cluster: Cluster):
    """The same cluster read per host at query time (a no-op selector: the rules cannot serve
    it), placed by the portal."""
    source = cluster.promql_source
    source.selector = '__name__=~".+"'
    source.save(update_fields=["selector"])
    return read.rack_card_figures(cluster.pk, NAMES, hot_n=3)


def _recorded_fleet(server, *, placement_scraped: bool) -> Cluster:
    """The fleet in ``server``, synced and placed by the portal, the rules replayed over it
    (with the placement scraped beside it, or not)."""
    now = time.time()
    server.import_text(_fleet(now))
    server.wait_for_series("DCGM_FI_DEV_GPU_UTIL", len(DCGM_HOSTS) * GPUS)
    catalogue_sync()
    cluster = _placed_cluster(server.url)
    if placement_scraped:
        _topology_scraped(server, now)
        server.wait_for_series("cluster_portal_node_rack", len(PLACEMENT))
    server.replay_rules(RULES_FILE, start=now - 60, end=now, step=INTERVAL)
    return cluster


def test_rack_figures_from_the_per_rack_rules_equal_the_per_host_answers_placed_by_the_portal(
    victoria_metrics,  # noqa: F811
):
    cluster = _recorded_fleet(victoria_metrics, placement_scraped=True)

    recorded = read.rack_card_figures(cluster.pk, NAMES, hot_n=3)
    assert recorded.source == SOURCE_PROMQL_RULES_RACKS
    live = _live(cluster)
    assert live.source == SOURCE_PROMQL
    r0, r1 = (Rack.objects.get(supernode__cluster=cluster, name=n).pk for n in ("r0", "r1"))
    assert set(recorded.racks) == set(live.racks) == {r0, r1, None}
    for rack in (r0, r1, None):
        for name in NAMES:
            got, want = recorded.racks[rack].get(name), live.racks[rack].get(name)
            assert (got is None) == (want is None), (rack, name)
            if got is not None:
                assert _figures(got, name) == pytest.approx(_figures(want, name)), (rack, name)
    # rr0 and rr1: 8 GPUs, one with XID 79; r1: rr2's 4 GPUs and npu0's two chips, one sick.
    assert _figures(recorded.racks[r0][HEALTH], HEALTH)[::2] == (8, 7)
    assert _figures(recorded.racks[r1][HEALTH], HEALTH)[::2] == (6, 5)
    assert recorded.racks[None]["accelerator_utilization_ratio"].cards == GPUS  # "loose"


def test_without_the_placement_the_rack_records_are_not_read_as_racks(
    victoria_metrics,  # noqa: F811
):
    cluster = _recorded_fleet(victoria_metrics, placement_scraped=False)

    recorded = read.rack_card_figures(cluster.pk, NAMES, hot_n=3)
    assert recorded.source == SOURCE_PROMQL_RULES  # the per-host records, placed here
    live = _live(cluster)
    for rack, metrics in live.racks.items():
        for name, want in metrics.items():
            got = _figures(recorded.racks[rack][name], name)
            assert got == pytest.approx(_figures(want, name)), (rack, name)
