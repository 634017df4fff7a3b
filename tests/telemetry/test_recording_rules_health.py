"""dcgm's health point and hotspot candidates from the shipped recording rules (issue 33 §3)
on a real VictoriaMetrics, the rules evaluated by Debian's ``vmalert`` in replay mode: the
recorded GPU count and sparse failing series give the same healthy count, rack health and
failing chips as the query-time aggregation, and a non-critical XID fails no card."""

from __future__ import annotations

import shutil
import time
from datetime import UTC, datetime

import pytest

from inventory.models import Cluster
from telemetry import read
from telemetry.models import PromQLDataSource
from telemetry.read.fleet import HEALTH, SOURCE_PROMQL, SOURCE_PROMQL_RULES
from telemetry.read.promql.hosts import hot_chip_ids
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
HOSTS, GPUS = 2, 8
# (host, gpu) -> what fails it: a critical last XID, an uncorrectable ECC count, a critical
# XID counted; XID 13 (a program's fault) on another GPU fails nothing.
FAILING = {(0, 0): "xid 79", (1, 2): "ecc", (1, 3): "counted 48"}


def _uuid(h: int, g: int) -> str:
    return f"GPU-{h:02d}{g:02d}-health"


def _fleet(now: float) -> str:
    lines = []
    for i in range(3):
        at_ms = int((now - (2 - i) * 30) * 1000)
        for h in range(HOSTS):
            for g in range(GPUS):
                labels = f'gpu="{g}",UUID="{_uuid(h, g)}",Hostname="hh{h}",modelName="H100"'
                cause = FAILING.get((h, g), "")
                xid = 79 if cause == "xid 79" else 13 if (h, g) == (0, 1) else 0
                ecc = 2 if cause == "ecc" else 0
                lines += [
                    f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} {10 * g + h} {at_ms}",
                    f"DCGM_FI_DEV_GPU_TEMP{{{labels}}} {40 + g + 10 * h} {at_ms}",
                    f"DCGM_FI_DEV_XID_ERRORS{{{labels}}} {xid} {at_ms}",
                    f"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{{labels}}} {ecc} {at_ms}",
                ]
                if cause == "counted 48":
                    lines.append(f'DCGM_EXP_XID_ERRORS_COUNT{{{labels},xid="48"}} 1 {at_ms}')
    return "\n".join(lines) + "\n"


def _cluster(name: str, url: str, selector: str = "") -> Cluster:
    cluster = Cluster.objects.create(name=name, kind=Cluster.Kind.UNIFIED)
    source = PromQLDataSource.objects.create(cluster=cluster, url=url, selector=selector)
    assert promql_source_sync(source=source).cards == HOSTS * GPUS
    return cluster


def test_health_and_hot_chips_read_from_the_rules_equal_the_live_aggregation(
    victoria_metrics,  # noqa: F811
):
    now = time.time()
    victoria_metrics.import_text(_fleet(now))
    victoria_metrics.wait_for_series("DCGM_FI_DEV_XID_ERRORS", HOSTS * GPUS)
    victoria_metrics.replay_rules(RULES_FILE, start=now - 90, end=now, step=INTERVAL)
    catalogue_sync()
    recorded = _cluster("health-rules", victoria_metrics.url)
    live = _cluster("health-live", victoria_metrics.url, selector='Hostname=~".+"')

    names = ["cluster_cards_healthy"]
    values, sources = read.cluster_figures_latest(recorded, names)
    assert sources == {"cluster_cards_healthy": SOURCE_PROMQL_RULES}
    live_values, live_sources = read.cluster_figures_latest(live, names)
    assert live_sources == {"cluster_cards_healthy": SOURCE_PROMQL}
    assert values == live_values == {"cluster_cards_healthy": HOSTS * GPUS - len(FAILING)}

    racks = read.rack_card_figures(recorded.pk, [HEALTH], hot_n=3)
    live_racks = read.rack_card_figures(live.pk, [HEALTH], hot_n=3)
    # No rack in the inventory: the per-rack records, every host under "none".
    assert racks.source == SOURCE_PROMQL_RULES_RACKS
    got, want = racks.racks[None][HEALTH], live_racks.racks[None][HEALTH]
    assert (got.cards, got.ones) == (want.cards, want.ones) == (16, 13)

    at = datetime.now(tz=UTC)
    hot = hot_chip_ids(recorded.promql_source, n=3, at=at)
    assert hot == hot_chip_ids(live.promql_source, n=3, at=at)
    failing = {_uuid(h, g) for h, g in FAILING}
    hottest = {_uuid(1, g) for g in (5, 6, 7)}  # temperature: host 1's last three GPUs
    busiest = {_uuid(1, 7), _uuid(0, 7), _uuid(1, 6)}
    assert hot["DCGM_"] == failing | hottest | busiest  # the XID 13 GPU is not among them
