"""Dense frames: exact rollups, replay safety, and reads that treat frames like rows."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from django.db import transaction

from inventory.models import Node, Rack, Supernode
from telemetry.models import Entity, Frame, MetricDefinition
from telemetry.read import aggregate_by, latest_values, series_read, top_entities
from telemetry.receivers.twin import layout_for_keys
from telemetry.store.frame_close import frames_rollups_close
from telemetry.store.frame_codec import frame_array
from telemetry.store.frames import COUNT_DTYPE, SUM_DTYPE, frames_write
from telemetry.store.retention import RetentionPolicy, telemetry_prune

KEYS = [f"sn0/r{r}/n0/c{c}" for r in range(2) for c in range(4)]


@pytest.fixture
def layout(cluster):
    supernode = Supernode.objects.create(cluster=cluster, name="sn0")
    for r in range(2):
        rack = Rack.objects.create(supernode=supernode, name=f"sn0/r{r}")
        node = Node.objects.create(cluster=cluster, hostname=f"sn0/r{r}/n0", rack=rack)
        for c in range(4):
            Entity.objects.create(
                cluster=cluster,
                kind="accelerator",
                key=f"sn0/r{r}/n0/c{c}",
                rack=rack,
                supernode=supernode,
                node=node,
            )
    return layout_for_keys(cluster, "accelerator", KEYS)


@pytest.fixture
def util():
    return MetricDefinition.objects.get(name="accelerator_utilization_ratio")


def write(layout, metric, values, ts):
    with transaction.atomic():
        return frames_write(layout=layout, values={metric.id: np.asarray(values, float)}, ts=ts)


@pytest.mark.django_db
def test_a_layout_keeps_the_key_order_and_is_reused(layout, cluster):
    again = layout_for_keys(cluster, "accelerator", KEYS)
    assert again.pk == layout.pk
    keys = [Entity.objects.get(pk=i).key for i in np.frombuffer(bytes(layout.entity_ids), np.int64)]
    assert keys == KEYS


@pytest.mark.django_db
def test_frame_rollups_equal_per_entity_aggregates_and_skip_missing_values(layout, util):
    t0 = 1_780_000_020  # inside one minute bucket
    first = [0.1, 0.2, np.nan, 0.4, 0.5, 0.6, 0.7, 0.8]
    second = [0.3, 0.0, 0.9, np.nan, 0.5, 0.6, 0.7, 1.0]
    write(layout, util, first, t0)
    write(layout, util, second, t0 + 20)
    minute = Frame.objects.get(metric=util, layout=layout, resolution=60)
    count = frame_array(minute.count, COUNT_DTYPE)
    total = frame_array(minute.sum, SUM_DTYPE)
    both = np.array([first, second])
    assert count.tolist() == (~np.isnan(both)).sum(axis=0).tolist()
    assert np.allclose(total, np.nansum(both, axis=0), atol=1e-6)
    low = frame_array(minute.min, np.float32)
    assert np.allclose(low, np.nanmin(both, axis=0), atol=1e-6)
    frames_rollups_close(now=t0 + 3600)
    assert Frame.objects.filter(resolution=3600).count() == 1


@pytest.mark.django_db
def test_a_replayed_frame_changes_nothing(layout, util):
    values = np.linspace(0, 1, 8)
    assert write(layout, util, values, 1_780_000_000) == 1
    before = bytes(Frame.objects.get(resolution=60).sum)
    assert write(layout, util, values, 1_780_000_000) == 0
    assert bytes(Frame.objects.get(resolution=60).sum) == before


@pytest.mark.django_db
def test_a_frame_of_the_wrong_size_is_refused(layout, util):
    with pytest.raises(ValueError, match="layout has 8"):
        write(layout, util, [0.5] * 7, 1_780_000_000)
    assert not Frame.objects.exists()


@pytest.mark.django_db
def test_reads_treat_frame_values_like_samples(layout, util, cluster):
    now = time.time()
    for i in range(30):
        write(layout, util, [0.1 * (k + 1) for k in range(8)], now - 60 * i)
    entity = Entity.objects.get(key="sn0/r1/n0/c3")
    series = series_read(
        metric=util,
        entity=entity,
        start=datetime.fromtimestamp(now - 3600, UTC),
        end=datetime.fromtimestamp(now + 1, UTC),
    )
    assert series.source == "raw"
    assert len(series.points) == 30
    assert all(p.mean == pytest.approx(0.8) for p in series.points)
    assert latest_values([entity])[entity.pk]["accelerator_utilization_ratio"] == pytest.approx(0.8)
    since = datetime.now(tz=UTC) - timedelta(hours=1)
    assert (
        top_entities(metric=util, cluster_id=cluster.pk, since=since, limit=2)[0][0]
        == "sn0/r1/n0/c3"
    )
    by_rack = aggregate_by(metric=util, cluster_id=cluster.pk, since=since, group="rack")
    assert by_rack == {"sn0/r0": pytest.approx(0.25), "sn0/r1": pytest.approx(0.65)}


@pytest.mark.django_db
def test_retention_prunes_old_raw_frames_but_keeps_rollups(layout, util):
    now = datetime.now(tz=UTC)
    write(layout, util, [0.5] * 8, (now - timedelta(hours=10)).timestamp())
    write(layout, util, [0.5] * 8, (now - timedelta(minutes=5)).timestamp())
    policy = RetentionPolicy(
        raw_accelerator=timedelta(hours=6),
        raw_other=timedelta(hours=48),
        rollup={60: timedelta(days=8), 3600: timedelta(days=90), 86400: timedelta(days=1100)},
    )
    deleted = telemetry_prune(policy=policy, now=now)
    assert deleted["frames_raw"] == 1
    assert Frame.objects.filter(resolution=0).count() == 1
    assert Frame.objects.filter(resolution=60).count() == 2


@pytest.mark.django_db
def test_frame_minute_rollups_follow_their_own_shorter_retention(layout, util):
    now = datetime.now(tz=UTC)
    write(layout, util, [0.5] * 8, (now - timedelta(days=3)).timestamp())
    frames_rollups_close()
    policy = RetentionPolicy(
        raw_accelerator=timedelta(hours=6),
        raw_other=timedelta(hours=48),
        rollup={60: timedelta(days=8), 3600: timedelta(days=90), 86400: timedelta(days=1100)},
        frame_rollup={60: timedelta(days=2), 3600: timedelta(days=90), 86400: timedelta(days=1100)},
    )
    deleted = telemetry_prune(policy=policy, now=now)
    assert deleted["frames_60"] == 1
    assert Frame.objects.filter(resolution=3600).count() == 1
