"""Fleet figures on a PromQL source are summed and counted by the server (issue 33 §3): on a
real VictoriaMetrics holding an awkward capture (PROF and DEV utilisation on one GPU, a MIG
slice, dcgm blank sentinels, npu-exporter's -1, dcgm's used + free memory, a chip without a
UUID, one chip reported by two targets), the aggregated answer equals the per-card fold
through the ingestion mapping, bucket by bucket, and its answers do not grow with the fleet."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from inventory.models import Cluster
from telemetry.models import PromQLDataSource
from telemetry.read.fleet import CARD_METRICS
from telemetry.read.promql import fleet as promql_fleet
from telemetry.read.promql.client import PromQLClient
from telemetry.read.promql.reads import _Reader

pytestmark = [pytest.mark.slow, pytest.mark.django_db]
SENTINEL = 9223372036854775794
H100 = 'modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-01"'
NPU = 'model_name="Ascend910B",hostname="atlas-07"'


def _capture_rows(i: int) -> list[str]:
    """One scrape's worth of lines; values move with ``i`` so buckets differ."""
    return [
        # GPU-a reports both utilisation fields: PROF is the figure.
        f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{gpu="0",UUID="GPU-a",{H100}}} {0.5 + i / 100}',
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",UUID="GPU-a",{H100}}} 99',
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="1",UUID="GPU-b",{H100}}} {10 + i}',
        # A MIG slice of GPU-c: its own chip.
        f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{gpu="2",UUID="GPU-c",GPU_I_ID="1",{H100}}} 1',
        f'DCGM_FI_DEV_POWER_USAGE{{gpu="0",UUID="GPU-a",{H100}}} {300 + i}',
        f'DCGM_FI_DEV_POWER_USAGE{{gpu="1",UUID="GPU-b",{H100}}} {SENTINEL}',
        f'DCGM_FI_DEV_GPU_TEMP{{gpu="0",UUID="GPU-a",{H100}}} 70',
        f'DCGM_FI_DEV_GPU_TEMP{{gpu="1",UUID="GPU-b",{H100}}} {40 + i}',
        f'DCGM_FI_DEV_FB_USED{{gpu="0",UUID="GPU-a",{H100}}} {1000 + i}',
        f'DCGM_FI_DEV_FB_FREE{{gpu="0",UUID="GPU-a",{H100}}} 80000',
        f'DCGM_FI_DEV_FB_USED{{gpu="1",UUID="GPU-b",{H100}}} 2048',
        f'DCGM_FI_DEV_FB_FREE{{gpu="1",UUID="GPU-b",{H100}}} 79000',
        # No UUID: an index-plus-host chip, folded one series at a time.
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="5",{H100}}} 40',
        # Two targets report GPU-b's temperature: one value counts for the chip.
        f'DCGM_FI_DEV_GPU_TEMP{{gpu="1",UUID="GPU-b",{H100},instance="other:9400"}} {40 + i}',
        # dcgm health inputs: XID 79 (fell off the bus) fails GPU-b; GPU-a's application
        # XID 13 counter and zero pending retirements leave it healthy.
        f'DCGM_FI_DEV_XID_ERRORS{{gpu="0",UUID="GPU-a",{H100}}} 0',
        f'DCGM_FI_DEV_XID_ERRORS{{gpu="1",UUID="GPU-b",{H100}}} 79',
        f'DCGM_EXP_XID_ERRORS_COUNT{{gpu="0",UUID="GPU-a",xid="13",{H100}}} 2',
        f'DCGM_FI_DEV_RETIRED_PENDING{{gpu="0",UUID="GPU-a",{H100}}} 0',
        f'DCGM_FI_DEV_XID_ERRORS{{gpu="5",{H100}}} 0',
        f'npu_chip_info_utilization{{id="0",vdie_id="VD-0",{NPU}}} {55 + i}',
        f'npu_chip_info_utilization{{id="1",vdie_id="VD-1",{NPU}}} -1',
        f'npu_chip_info_temperature{{id="0",vdie_id="VD-0",{NPU}}} 60',
        f'npu_chip_info_hbm_used_memory{{id="0",vdie_id="VD-0",{NPU}}} 32768',
        f'npu_chip_info_hbm_total_memory{{id="0",vdie_id="VD-0",{NPU}}} 65536',
        f'npu_chip_info_power{{id="0",vdie_id="VD-0",{NPU}}} NaN',
        f'npu_chip_info_health_status{{id="0",vdie_id="VD-0",{NPU}}} 1',
        f'npu_chip_info_health_status{{id="1",vdie_id="VD-1",{NPU}}} -1',
    ]


@pytest.fixture
def engine(victoria_metrics):
    return victoria_metrics


def _load(engine, *, now: float, scrapes: int = 12, every: int = 15) -> None:
    lines = []
    for i in range(scrapes):
        at_ms = int((now - (scrapes - 1 - i) * every) * 1000)
        lines += [f"{row} {at_ms}" for row in _capture_rows(i)]
    engine.import_text("\n".join(lines) + "\n")
    stored = [row for row in _capture_rows(0) if not row.endswith("NaN")]  # NaN: no point
    engine.wait_for_series('{__name__=~"DCGM_.*|npu_.*"}', len(stored))


def test_aggregated_fleet_buckets_equal_the_per_card_fold(engine):
    now = time.time()
    _load(engine, now=now)
    cluster = Cluster.objects.create(name="vm-fleet", kind=Cluster.Kind.UNIFIED)
    source = PromQLDataSource.objects.create(cluster=cluster, url=engine.url)
    end = datetime.fromtimestamp(now, tz=UTC)
    start = end - timedelta(minutes=3)

    step, aggregated = promql_fleet.card_buckets(
        source, names=list(CARD_METRICS), start=start, end=end
    )
    reader = _Reader(source)
    checked = 0
    for name in CARD_METRICS:
        grid = promql_fleet.range_grid(reader, start=start, end=end, step=step)
        per_card = promql_fleet._fold_per_card(reader, name, grid)
        got = {at: metrics[name] for at, metrics in aggregated.items() if name in metrics}
        assert set(got) == set(per_card), name
        for at, expected in per_card.items():
            assert got[at].cards == expected.cards, (name, at)
            assert got[at].ones == expected.ones, (name, at)
            assert got[at].total == pytest.approx(expected.total, rel=1e-12), (name, at)
            checked += 1
    assert checked >= 6 * 8  # every metric over most of the window's buckets

    # Spot-check the awkward rows against the capture itself, at the newest bucket.
    newest = aggregated[max(aggregated)]
    util = newest["accelerator_utilization_ratio"]
    assert util.cards == 5  # GPU-a (PROF), GPU-b, the MIG slice, the UUID-less GPU, VD-0
    assert newest["accelerator_power_watts"].cards == 1  # sentinel and NaN dropped
    assert newest["accelerator_temperature_celsius"].cards == 3  # GPU-b counted once
    total = newest["accelerator_hbm_total_bytes"]
    assert total.cards == 3  # GPU-a and GPU-b as used + free, VD-0 from its own field
    assert total.total % 2**20 == 0 and total.total > (80000 + 79000 + 65536) * 2**20
    health = newest["accelerator_health_status"]
    assert (health.cards, health.ones) == (5, 3)  # GPU-a, GPU-5 and VD-0; GPU-b and VD-1 not


def test_the_aggregated_answers_do_not_grow_with_the_fleet(engine, monkeypatch):
    now = time.time()
    hosts = 40  # 320 cards: a per-card answer would carry 320 series per metric
    lines = []
    for i in range(6):
        at_ms = int((now - (5 - i) * 15) * 1000)
        for h in range(hosts):
            for g in range(8):
                labels = f'gpu="{g}",UUID="GPU-{h}-{g}",Hostname="n{h}"'
                lines.append(f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} {(h + g + i) % 100} {at_ms}")
    engine.import_text("\n".join(lines) + "\n")
    engine.wait_for_series("DCGM_FI_DEV_GPU_UTIL", hosts * 8)
    cluster = Cluster.objects.create(name="vm-wide", kind=Cluster.Kind.UNIFIED)
    source = PromQLDataSource.objects.create(cluster=cluster, url=engine.url)
    answered: list[int] = []
    original = PromQLClient.query_range

    def counting(self, expr, **kwargs):
        result = original(self, expr, **kwargs)
        answered.append(len(result))
        return result

    monkeypatch.setattr(PromQLClient, "query_range", counting)
    end = datetime.fromtimestamp(now, tz=UTC)
    _, buckets = promql_fleet.card_buckets(
        source, names=["accelerator_utilization_ratio"], start=end - timedelta(minutes=2), end=end
    )
    assert max(agg["accelerator_utilization_ratio"].cards for agg in buckets.values()) == 320
    assert max(answered) <= 3, answered  # total, cards, ones; the UUID-less query is empty


def test_the_newest_fleet_figures_are_one_instant_aggregate_equal_to_the_per_card_fold(engine):
    now = time.time()
    _load(engine, now=now)
    cluster = Cluster.objects.create(name="vm-latest", kind=Cluster.Kind.UNIFIED)
    source = PromQLDataSource.objects.create(cluster=cluster, url=engine.url)
    at = datetime.fromtimestamp(now, tz=UTC)
    latest = promql_fleet.card_latest(source, names=list(CARD_METRICS), at=at)
    reader = _Reader(source)

    def ask(expr):
        return reader.client.query(expr, at=at)

    grid = promql_fleet.Grid(ask=ask, key=lambda *_: 0, sample_key=lambda _s: 0)
    for name in CARD_METRICS:
        [expected] = promql_fleet._fold_per_card(reader, name, grid).values()
        assert (latest[name].cards, latest[name].ones) == (expected.cards, expected.ones), name
        assert latest[name].total == pytest.approx(expected.total, rel=1e-12), name
    assert latest["accelerator_utilization_ratio"].cards == 5
    assert (
        latest["accelerator_health_status"].cards,
        latest["accelerator_health_status"].ones,
    ) == (5, 3)
