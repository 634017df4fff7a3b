"""The PromQL inventory sync pages through answers that pass ``PROMQL_MAX_RESPONSE_BYTES``
(issue 33 §3): on a real VictoriaMetrics holding 320 cards, a cap far below one answer still
registers every card, with the same keys, hosts, holders and health as an uncapped sync."""

from __future__ import annotations

import hashlib
import time
from datetime import UTC, datetime

import pytest

from inventory.models import Accelerator, Cluster
from telemetry.models import AttributionInterval, PromQLDataSource
from telemetry.read.promql.client import DataSourceUnavailable, PromQLClient
from telemetry.receivers.promql_sync import promql_source_sync
from telemetry.receivers.twin import catalogue_sync

pytestmark = [pytest.mark.slow, pytest.mark.django_db]
HOSTS, GPUS = 40, 8


def _fleet(now: float) -> str:
    lines = []
    for i in range(3):
        at_ms = int((now - (2 - i) * 15) * 1000)
        for h in range(HOSTS):
            for g in range(GPUS):
                # dcgm UUIDs end in random hex, which is what the pages split on.
                uuid = "GPU-" + hashlib.md5(f"{h}/{g}".encode()).hexdigest()
                pod = f',pod="train-{h}",namespace="acme"' if h % 2 else ""
                labels = f'gpu="{g}",UUID="{uuid}",Hostname="n{h:02d}",modelName="H100"{pod}'
                lines.append(f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} {(h + g) % 100} {at_ms}")
                lines.append(f"DCGM_FI_DEV_XID_ERRORS{{{labels}}} {79 if g == 7 else 0} {at_ms}")
    # A card without a UUID: its own page; one whose UUID is one character: no longer
    # suffix can match it.
    lines.append(f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",Hostname="solo"}} 5 {int(now * 1000)}')
    lines.append(f'DCGM_FI_DEV_GPU_UTIL{{gpu="1",UUID="7",Hostname="solo"}} 6 {int(now * 1000)}')
    return "\n".join(lines) + "\n"


def _state(cluster: Cluster) -> tuple:
    cards = set(
        Accelerator.objects.filter(node__cluster=cluster).values_list(
            "node__hostname", "index", "vendor_id", "health"
        )
    )
    held = AttributionInterval.objects.filter(cluster=cluster).count()
    return cards, held


def test_a_sync_past_the_answer_cap_pages_and_registers_every_card(victoria_metrics, settings):
    victoria_metrics.import_text(_fleet(time.time()))
    victoria_metrics.wait_for_series("DCGM_FI_DEV_GPU_UTIL", HOSTS * GPUS + 2)
    catalogue_sync()
    full = Cluster.objects.create(name="vm-full", kind=Cluster.Kind.UNIFIED)
    paged = Cluster.objects.create(name="vm-paged", kind=Cluster.Kind.UNIFIED)
    promql_source_sync(
        source=PromQLDataSource.objects.create(cluster=full, url=victoria_metrics.url)
    )

    settings.PROMQL_MAX_RESPONSE_BYTES = 12_000  # one answer is ~90 kB; a page ~6 kB
    with pytest.raises(DataSourceUnavailable, match="PROMQL_MAX_RESPONSE_BYTES"):
        PromQLClient(cluster="x", url=victoria_metrics.url).query(
            'DCGM_FI_DEV_GPU_UTIL{UUID!=""}', at=datetime.now(tz=UTC)
        )
    result = promql_source_sync(
        source=PromQLDataSource.objects.create(cluster=paged, url=victoria_metrics.url)
    )
    assert result.cards == HOSTS * GPUS + 2
    assert result.held == (HOSTS // 2) * GPUS
    got, expected = _state(paged), _state(full)
    assert got[0] ^ expected[0] == set() and got[1] == expected[1]
    # A cap that splits every first-level page too (two characters deep) finds the same.
    settings.PROMQL_MAX_RESPONSE_BYTES = 2_500
    deeper = Cluster.objects.create(name="vm-deeper", kind=Cluster.Kind.UNIFIED)
    again = promql_source_sync(
        source=PromQLDataSource.objects.create(cluster=deeper, url=victoria_metrics.url)
    )
    assert again.cards == result.cards and _state(deeper) == _state(paged)
    unhealthy = Accelerator.objects.filter(
        node__cluster=paged, health=Accelerator.Health.UNHEALTHY
    ).count()
    assert unhealthy == HOSTS  # gpu 7 of every host reports XID 79


def test_a_card_s_fields_are_mapped_once_and_a_dropped_field_leaves_it_to_the_next(
    victoria_metrics,
):
    """The sync maps one series per card and holder, not one per field (the other fields of
    the same label set only move its sample time forward); a field whose value the mapping
    would drop (dcgm's blank) still reports its card, and a field with other labels (a
    holder) is mapped on its own."""
    now = time.time()
    old, new = int((now - 60) * 1000), int((now - 5) * 1000)
    blank = 9223372036854775792
    victoria_metrics.import_text(
        "\n".join(
            [
                f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",UUID="GPU-a",Hostname="f1"}} 40 {old}',
                f'DCGM_FI_DEV_GPU_TEMP{{gpu="0",UUID="GPU-a",Hostname="f1"}} 50 {new}',
                f'DCGM_FI_DEV_GPU_UTIL{{gpu="1",UUID="GPU-b",Hostname="f1"}} {blank} {new}',
                f'DCGM_FI_DEV_GPU_TEMP{{gpu="1",UUID="GPU-b",Hostname="f1"}} 51 {new}',
                f'DCGM_FI_DEV_GPU_UTIL{{gpu="2",UUID="GPU-c",Hostname="f1"}} 10 {new}',
                f'DCGM_FI_DEV_GPU_TEMP{{gpu="2",UUID="GPU-c",Hostname="f1",pod="p",namespace="acme"}}'
                f" 52 {new}",
            ]
        )
        + "\n"
    )
    victoria_metrics.wait_for_series("DCGM_FI_DEV_GPU_TEMP", 3)
    catalogue_sync()
    cluster = Cluster.objects.create(name="vm-fields", kind=Cluster.Kind.UNIFIED)
    result = promql_source_sync(
        source=PromQLDataSource.objects.create(cluster=cluster, url=victoria_metrics.url)
    )
    assert result.cards == 3 and result.held == 1  # the labelled field names GPU-c's holder
    seen = dict(
        Accelerator.objects.filter(node__cluster=cluster).values_list("vendor_id", "last_seen")
    )
    assert set(seen) == {"GPU-a", "GPU-b", "GPU-c"} and all(seen.values())


def test_a_card_is_seen_at_its_newest_sample_on_the_server_not_at_the_sync(victoria_metrics):
    """An instant query stamps its answer with the evaluation time; ``last_seen`` must be the
    series' own newest sample (``timestamp()``), or a card whose exporter stopped four minutes
    ago (still inside the 5-minute lookback) would read as seen just now and never as absent."""
    now = time.time()
    stale, fresh = round(now - 240, 3), round(now - 5, 3)
    victoria_metrics.import_text(
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",UUID="GPU-stale",Hostname="s1"}} 40 {int(stale * 1000)}\n'
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="1",UUID="GPU-fresh",Hostname="s1"}} 41 {int(fresh * 1000)}\n'
        f'DCGM_FI_DEV_XID_ERRORS{{gpu="1",UUID="GPU-fresh",Hostname="s1"}} 0 {int(fresh * 1000)}\n'
    )
    victoria_metrics.wait_for_series("DCGM_FI_DEV_GPU_UTIL", 2)
    catalogue_sync()
    cluster = Cluster.objects.create(name="vm-seen", kind=Cluster.Kind.UNIFIED)
    source = PromQLDataSource.objects.create(cluster=cluster, url=victoria_metrics.url)
    promql_source_sync(source=source, at=datetime.fromtimestamp(now, tz=UTC))
    seen = {
        vendor: last.timestamp()
        for vendor, last in Accelerator.objects.filter(node__cluster=cluster).values_list(
            "vendor_id", "last_seen"
        )
    }
    assert seen["GPU-stale"] == pytest.approx(stale, abs=0.01)
    assert seen["GPU-fresh"] == pytest.approx(fresh, abs=0.01)  # the health field moves nothing
