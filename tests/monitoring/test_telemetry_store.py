"""The store writes each point once and keeps 1 min / 1 h / 1 day rollups equal to raw data."""

from __future__ import annotations

import random

import pytest
from django.db import transaction
from django.db.models import Count, Max, Min, Sum

from monitoring.models import Entity, MetricDefinition, Rollup, Sample
from monitoring.telemetry.store import ROLLUP_RESOLUTIONS, samples_write

T0 = 1_780_000_000  # a fixed instant; buckets are computed from it in the assertions


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


@pytest.mark.django_db
def test_rollups_match_an_aggregate_of_the_raw_samples(series_ids):
    metric_id, entities = series_ids
    rng = random.Random(3)
    rows = [
        (metric_id, entity, T0 + 17 * step, rng.random())
        for entity in entities
        for step in range(400)  # ~1.9 h: crosses minute and hour boundaries
    ]
    # Two batches, split mid-bucket, so rollups must merge.
    write(rows[:500])
    write(rows[500:])
    for resolution in ROLLUP_RESOLUTIONS:
        for entity in entities:
            expected: dict[int, list[float]] = {}
            for _, e, seconds, value in rows:
                if e == entity:
                    expected.setdefault(int(seconds // resolution * resolution), []).append(value)
            stored = Rollup.objects.filter(entity_id=entity, resolution=resolution)
            assert stored.count() == len(expected)
            for rollup in stored:
                values = expected[int(rollup.bucket.timestamp())]
                assert rollup.count == len(values)
                assert rollup.sum == pytest.approx(sum(values))
                assert rollup.min == pytest.approx(min(values))
                assert rollup.max == pytest.approx(max(values))
    totals = Sample.objects.aggregate(
        n=Count("id"), s=Sum("value"), lo=Min("value"), hi=Max("value")
    )
    assert totals["n"] == len(rows)


@pytest.mark.django_db
def test_a_replayed_batch_changes_neither_raw_data_nor_rollups(series_ids):
    metric_id, entities = series_ids
    rows = [(metric_id, entities[0], T0 + 60 * i, float(i)) for i in range(10)]
    first = write(rows)
    snapshot = list(Rollup.objects.order_by("id").values_list("count", "sum", "min", "max"))
    again = write(rows)
    assert (first.inserted, again.inserted, again.duplicates) == (10, 0, 10)
    assert Sample.objects.count() == 10
    assert list(Rollup.objects.order_by("id").values_list("count", "sum", "min", "max")) == snapshot


@pytest.mark.django_db
def test_only_new_points_of_an_overlapping_batch_reach_the_rollups(series_ids):
    metric_id, entities = series_ids
    write([(metric_id, entities[0], T0, 1.0)])
    result = write([(metric_id, entities[0], T0, 1.0), (metric_id, entities[0], T0 + 1, 3.0)])
    assert result.inserted == 1
    minute = Rollup.objects.get(
        resolution=60, bucket__lte=Sample.objects.first().ts, entity_id=entities[0]
    )
    assert (minute.count, minute.sum, minute.min, minute.max) == (2, 4.0, 1.0, 3.0)


@pytest.mark.django_db
def test_a_failed_transaction_leaves_no_samples_and_no_rollups(series_ids):
    metric_id, entities = series_ids
    with pytest.raises(RuntimeError), transaction.atomic():
        samples_write([(metric_id, entities[0], T0, 1.0)])
        raise RuntimeError("crash after the write, before commit")
    assert not Sample.objects.exists()
    assert not Rollup.objects.exists()
