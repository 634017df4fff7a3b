"""The store writes each point once; compaction builds 1 min / 1 h / 1 day rollups equal to
the raw data, exactly once, and late samples are folded into compacted buckets."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest
from django.db import transaction

from telemetry.models import Entity, MetricDefinition, Rollup, RollupWatermark, Sample
from telemetry.read import series_read
from telemetry.receivers.twin import samples_write
from telemetry.store.compaction import rollups_compact
from telemetry.store.samples import ROLLUP_RESOLUTIONS

T0 = 20_602 * 86_400  # a fixed, day-aligned instant; buckets are computed from it
LATER = T0 + 10 * 86400  # "now" for compaction: everything written is long closed


@pytest.fixture
def series_ids(cluster) -> tuple[int, list[int]]:
    metric = MetricDefinition.objects.get(name="accelerator_utilization_ratio")
    entities = [
        Entity.objects.create(cluster=cluster, kind="accelerator", key=f"n/{i}").id
        for i in range(3)
    ]
    return metric.id, entities


def write(rows):
    with transaction.atomic():
        return samples_write(rows)


def expected_buckets(rows, entity, resolution):
    expected: dict[int, list[float]] = {}
    for _, e, seconds, value in rows:
        if e == entity:
            expected.setdefault(int(seconds // resolution * resolution), []).append(value)
    return expected


def assert_rollups_match(rows, entities):
    for resolution in ROLLUP_RESOLUTIONS:
        for entity in entities:
            expected = expected_buckets(rows, entity, resolution)
            stored = Rollup.objects.filter(entity_id=entity, resolution=resolution)
            assert stored.count() == len(expected), (resolution, entity)
            for rollup in stored:
                values = expected[int(rollup.bucket.timestamp())]
                assert rollup.count == len(values)
                assert rollup.sum == pytest.approx(sum(values))
                assert rollup.min == pytest.approx(min(values))
                assert rollup.max == pytest.approx(max(values))


@pytest.mark.django_db
def test_compaction_builds_rollups_equal_to_the_raw_samples(series_ids):
    metric_id, entities = series_ids
    rng = random.Random(3)
    rows = [
        (metric_id, entity, T0 + 17 * step, rng.random())
        for entity in entities
        for step in range(400)  # ~1.9 h: crosses minute and hour boundaries
    ]
    write(rows[:500])
    write(rows[500:])
    assert not Rollup.objects.exists(), "ingestion itself writes no rollups for fresh data"
    marks = rollups_compact(now=LATER)
    assert marks[60] > marks[86400] or marks[60] == marks[86400]
    assert Sample.objects.count() == len(rows)
    assert_rollups_match(rows, entities)


@pytest.mark.django_db
def test_compacting_twice_changes_nothing(series_ids):
    metric_id, entities = series_ids
    write([(metric_id, entities[0], T0 + 60 * i, float(i)) for i in range(10)])
    rollups_compact(now=LATER)
    snapshot = list(Rollup.objects.order_by("id").values_list("count", "sum", "min", "max"))
    rollups_compact(now=LATER)
    assert list(Rollup.objects.order_by("id").values_list("count", "sum", "min", "max")) == snapshot


@pytest.mark.django_db
def test_only_closed_buckets_are_compacted_and_the_rest_follows_later(series_ids):
    metric_id, entities = series_ids
    rows = [(metric_id, entities[0], T0 + 10 * i, 1.0) for i in range(30)]  # 5 minutes
    write(rows)
    rollups_compact(now=T0 + 150, lag=0)  # minutes 0 and 1 have closed, minute 2 has not
    assert Rollup.objects.filter(resolution=60).count() == 2
    rollups_compact(now=LATER)
    assert_rollups_match(rows, [entities[0]])


@pytest.mark.django_db
def test_a_late_sample_for_a_compacted_bucket_is_folded_in_once(series_ids):
    metric_id, entities = series_ids
    rows = [(metric_id, entities[0], T0 + 60 * i, 2.0) for i in range(10)]
    write(rows)
    rollups_compact(now=LATER)
    late = [(metric_id, entities[0], T0 + 61, 10.0), (metric_id, entities[1], T0 + 5, 4.0)]
    assert write(late).inserted == 2
    assert write(late).inserted == 0  # a replay of the late batch changes nothing
    assert_rollups_match(rows + late, entities[:2])


@pytest.mark.django_db
def test_a_replayed_batch_changes_neither_raw_data_nor_rollups(series_ids):
    metric_id, entities = series_ids
    rows = [(metric_id, entities[0], T0 + 60 * i, float(i)) for i in range(10)]
    first = write(rows)
    again = write(rows)
    assert (first.inserted, again.inserted, again.duplicates) == (10, 0, 10)
    rollups_compact(now=LATER)
    assert_rollups_match(rows, [entities[0]])


@pytest.mark.django_db
def test_a_failed_transaction_leaves_no_samples_and_no_rollups(series_ids):
    metric_id, entities = series_ids
    with pytest.raises(RuntimeError), transaction.atomic():
        samples_write([(metric_id, entities[0], T0, 1.0)])
        raise RuntimeError("crash after the write, before commit")
    assert not Sample.objects.exists()
    assert not Rollup.objects.exists()


@pytest.mark.django_db
def test_range_reads_combine_compacted_rollups_with_the_uncompacted_tail(series_ids):
    metric_id, entities = series_ids
    hours = 12
    rows = [(metric_id, entities[0], T0 + 60 * i, 1.0) for i in range(hours * 60)]
    write(rows)
    rollups_compact(now=T0 + 6 * 3600, lag=0)  # first six hours compacted, the rest raw only
    assert RollupWatermark.objects.get(resolution=60).complete_until.timestamp() == pytest.approx(
        T0 + 6 * 3600, abs=60
    )
    metric = MetricDefinition.objects.get(pk=metric_id)
    entity = Entity.objects.get(pk=entities[0])
    series = series_read(
        metric=metric,
        entity=entity,
        start=datetime.fromtimestamp(T0, UTC),
        end=datetime.fromtimestamp(T0 + hours * 3600, UTC),
    )
    assert series.source == "rollup:60"
    assert sum(p.count for p in series.points) == hours * 60
