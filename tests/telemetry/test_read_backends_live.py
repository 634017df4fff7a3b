"""The same figure tests against every ``ReadBackend`` (issue 33 §1): one exporter capture
(``prometheus_fixtures``) is scraped into the store, or read through a real Prometheus, or
through a VictoriaMetrics that Prometheus remote-writes into, as a cluster's PromQL data
source — and every method of the interface, called through the ``telemetry.read`` façade,
answers the capture's figures with the ingestion path's entity keys and units."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from rest_framework.test import APIClient

from accounts.services.tokens import token_create
from cluster_portal.web.timerange import TimeRange
from inventory.models import Cluster, Workload
from telemetry import read
from telemetry.models import Entity, ExporterTarget, MetricDefinition, PromQLDataSource, Sample
from telemetry.read.backend import ReadBackend
from telemetry.read.local.backend import LocalBackend
from telemetry.read.promql.backend import PromQLBackend
from telemetry.read.promql.reads import promql_inventory_sync
from telemetry.receivers.scrape import exporter_scrape
from telemetry.receivers.twin import catalogue_sync
from tests.telemetry.prometheus_fixtures import DCGM_TEXT, NpuExporter, query_engine

pytestmark = [pytest.mark.slow, pytest.mark.django_db]
UTIL = "accelerator_utilization_ratio"
TEMP = "accelerator_temperature_celsius"
SCRAPES = 5


@pytest.fixture(autouse=True)
def loopback_allowed(settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]


def _store_cluster(exporters) -> Cluster:
    """The capture scraped into the store ``SCRAPES`` times, a second apart."""
    cluster = Cluster.objects.create(name="store-a", kind=Cluster.Kind.UNIFIED)
    base = f"http://127.0.0.1:{exporters.port}"
    dcgm = ExporterTarget.objects.create(
        name="a-dcgm", url=f"{base}/dcgm", kind="dcgm", cluster=cluster
    )
    npu = ExporterTarget.objects.create(
        name="a-npu", url=f"{base}/npu", kind="npu", cluster=cluster, node="atlas-07"
    )
    for i in range(SCRAPES):
        if i:
            time.sleep(1.0)
        assert exporter_scrape(target=npu)["ok"]
        # npu-exporter stamps its samples; dcgm's take the scrape time: the same second, so
        # each of the store's 1 s buckets holds every card (as Prometheus' lookback does).
        dcgm.refresh_from_db()
        assert exporter_scrape(target=dcgm, now=exporters.npu.served_ms[-1] / 1000)["ok"]
        npu.refresh_from_db()
    return cluster


@pytest.fixture(params=["store", "prometheus", "victoria-metrics"])
def backend_cluster(request, tmp_path, prometheus_required, exporters):
    """A cluster whose telemetry is the capture, read through the backend ``request.param``."""
    catalogue_sync()
    if request.param == "store":
        yield _store_cluster(exporters)
        return
    with query_engine(request.param, tmp_path, exporters) as engine:
        cluster = Cluster.objects.create(name="promql-a", kind=Cluster.Kind.UNIFIED)
        source = PromQLDataSource.objects.create(cluster=cluster, url=engine.url)
        assert promql_inventory_sync(source) == 4
        yield cluster


def _capture_utilization() -> dict[str, float]:
    text = DCGM_TEXT + NpuExporter()()
    found = re.findall(
        r'^(?:DCGM_FI_DEV_GPU_UTIL|npu_chip_info_utilization){[^}]*(?:UUID|vdie_id)="([^"]+)"'
        r"[^}]*} (\d+)",
        text,
        flags=re.M,
    )
    return {key: float(v) / 100 for key, v in found}


def _expected_backend(cluster: Cluster) -> type[ReadBackend]:
    return (
        PromQLBackend if PromQLDataSource.objects.filter(cluster=cluster).exists() else LocalBackend
    )


def test_series_latest_windows_and_top_n_are_the_capture_on_every_backend(backend_cluster):
    cluster = backend_cluster
    assert isinstance(read.backend_for(cluster), _expected_backend(cluster))
    util = _capture_utilization()
    ids = dict(Entity.objects.filter(cluster=cluster).values_list("key", "id"))
    assert {"GPU-aaa", "GPU-bbb", "VD-0", "VD-1"} <= set(ids)
    now = datetime.now(tz=UTC)
    tr = TimeRange(start=now - timedelta(minutes=5), end=now, preset="custom")

    # Heatmaps and latest values: the newest value per card, in catalogue units.
    snap = read.latest_kind(cluster.id, "accelerator", [UTIL, "accelerator_hbm_total_bytes"])
    by_entity = snap.by_entity()
    for key, value in util.items():
        assert by_entity[ids[key]][UTIL] == pytest.approx(value)
    assert by_entity[ids["GPU-bbb"]]["accelerator_hbm_total_bytes"] == 81920 * 2**20
    card = Entity.objects.get(cluster=cluster, key="GPU-aaa")
    assert read.latest_scalars(card, [UTIL, TEMP]) == pytest.approx({UTIL: 0.87, TEMP: 71.0})
    cards = list(Entity.objects.filter(cluster=cluster, kind="accelerator"))
    latest = read.latest_values(cards)
    assert {e.key: latest[e.pk][UTIL] for e in cards} == pytest.approx(util)

    # Series, one entity and many: the capture's constant value at every point.
    metric, temp = MetricDefinition.objects.get(name=UTIL), MetricDefinition.objects.get(name=TEMP)
    vd0 = Entity.objects.get(cluster=cluster, key="VD-0")
    series = read.series_read(metric=metric, entity=vd0, start=tr.start, end=now)
    assert series.points and all(p.mean == pytest.approx(0.55) for p in series.points)
    many = read.series_read_many(metrics=[metric, temp], entity=card, start=tr.start, end=now)
    assert many[TEMP].points and all(p.mean == pytest.approx(71.0) for p in many[TEMP].points)
    entities = read.series_read_entities(metric=metric, entities=cards, start=tr.start, end=now)
    assert {e.key: entities[e.pk].points[-1].mean for e in cards} == pytest.approx(util)
    points = read.series_points(metric, vd0, tr)
    assert points and all(v == pytest.approx(0.55) for _, v in points)
    both = read.series_points_many([metric, temp, None], card, tr)
    assert set(both) == {UTIL, TEMP} and all(v == pytest.approx(0.87) for _, v in both[UTIL])

    # Runs under a threshold (the idle list): GPU-bbb at 12 % is idle, GPU-aaa at 87 % is not.
    bbb = Entity.objects.get(cluster=cluster, key="GPU-bbb")
    idle, busy = read.runs_under(
        metric=metric, spans=[(bbb, tr.start), (card, tr.start)], end=now, threshold=0.2
    )
    assert idle.measured and idle.runs and not busy.runs

    # Gates' window aggregates from raw values, and alert rules over every card of the kind.
    agg = read.window_aggregate(
        metric=UTIL,
        cluster_id=cluster.id,
        entity_kind="accelerator",
        entity_key="GPU-aaa",
        aggregation="p95",
        start=now - timedelta(seconds=30),
        end=now,
    )
    assert agg.value == pytest.approx(0.87) and agg.samples >= 4
    rule = SimpleNamespace(pk=0, entity_kind="accelerator", aggregation="max", window_seconds=60)
    values = read.window_values(rule=rule, metric=metric, now=now).values
    assert {key: values[ids[key]] for key in util} == pytest.approx(util)
    top = read.top_entities(metric=metric, cluster_id=cluster.id, since=now - timedelta(minutes=1))
    assert [key for key, _ in top] == ["GPU-aaa", "VD-1", "VD-0", "GPU-bbb"]

    # The accelerators API: each card's entity key and its latest values.
    client = APIClient()
    client.credentials(
        HTTP_AUTHORIZATION=f"Bearer {token_create(name='g', scopes=['read']).plaintext}"
    )
    rows = client.get(f"/api/v1/accelerators/?cluster={cluster.name}").json()["results"]
    assert {row["entity"]: row["latest"][UTIL] for row in rows} == pytest.approx(util)
    if isinstance(read.backend_for(cluster), PromQLBackend):
        assert not Sample.objects.exists()  # nothing was copied into the store


def test_fleet_figures_sums_groups_serving_and_attribution_on_every_backend(
    backend_cluster, tenants
):
    cluster = backend_cluster
    backend = read.backend_for(cluster)
    util = _capture_utilization()
    busy = sum(util.values()) / len(util)
    end = datetime.now(tz=UTC)
    start = end - timedelta(minutes=1)

    # Fleet figures: derived from the cards (neither backend has cluster scalars here).
    values, sources = read.cluster_figures_latest(
        cluster, ["cluster_cards_total", "cluster_utilization_busy_ratio"]
    )
    assert values["cluster_cards_total"] == len(util)
    assert values["cluster_utilization_busy_ratio"] == pytest.approx(busy)
    assert set(sources.values()) == {backend.derived_source}
    series = read.cluster_series(cluster, "cluster_utilization_busy_ratio", start, end)
    assert series is not None and series.source == backend.derived_source and series.points
    assert all(p.mean == pytest.approx(busy) for p in series.points)
    stat = read.cluster_stat(cluster, "cluster_utilization_busy_ratio", start, end)
    assert stat is not None and stat.mean == pytest.approx(busy)
    first, last = read.data_span(cluster, start, end)
    assert start - timedelta(minutes=1) <= first <= last <= end
    curves, curve_sources = read.cluster_curves(
        cluster, ["cluster_cards_total"], start, end, have={}
    )
    assert curves["cluster_cards_total"] and curve_sources == {
        "cluster_cards_total": backend.derived_source
    }
    assert {v for _, v in curves["cluster_cards_total"]} == {len(util)}

    # Rack heatmaps (no racks here: every card in the "unassigned" row) and drill-down.
    racks = read.rack_card_figures(cluster.pk, [UTIL], hot_n=5)
    assert list(racks.racks) == [None] and racks.racks[None][UTIL].cards == len(util)
    assert racks.racks[None][UTIL].total == pytest.approx(sum(util.values()))
    keys = dict(Entity.objects.filter(cluster=cluster, kind="accelerator").values_list("id", "key"))
    drill = read.cards_latest(cluster.pk, list(keys), [UTIL])
    assert {keys[pk]: v[UTIL] for pk, v in drill.items()} == pytest.approx(util)

    # Window sums per card and means per group.
    sums = read.entity_sums(
        cluster=cluster, metric_name=UTIL, kind="accelerator", start=start, end=end
    )
    assert set(sums) == set(keys)
    assert {keys[i]: total / n for i, (total, n) in sums.items()} == pytest.approx(util)
    metric = MetricDefinition.objects.get(name=UTIL)
    by_cluster = read.aggregate_by(
        metric=metric, cluster_id=cluster.pk, since=start, group="cluster"
    )
    assert by_cluster == {cluster.name: pytest.approx(busy)}

    # Serving and attribution: a workload with no endpoints and no holders measures nothing
    # (no requests, no held card-seconds) on either backend — not an error, not a number.
    workload = Workload.objects.create(
        tenant=tenants["acme"], cluster=cluster, name="llm", kind="inference"
    )
    window = read.serving_window(
        cluster_id=cluster.pk, workload_id=workload.pk, start=start, end=end
    )
    assert window.requests == 0 and all(v is None for v in window.ttft.values())
    windows = read.serving_windows(
        cluster_id=cluster.pk, workload_ids=[workload.pk], start=start, end=end
    )
    assert windows.by_workload[workload.pk].requests == 0 and windows.pooled.requests == 0
    held = read.attribution_held_by_hour(
        cluster_id=cluster.pk, bindings=[("llm", "pod=llm-0")], start=start, end=end
    )
    assert held.intervals == 0 and float(held.card_seconds.sum()) == 0.0
    bound, total = read.attribution_bound_intervals(
        cluster_id=cluster.pk, selector="pod=llm-0", start=start, end=end
    )
    assert bound == [] and total == 0
