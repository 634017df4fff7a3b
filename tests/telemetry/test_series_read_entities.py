"""One metric of many entities read in one grouped query answers what a read per entity
answers."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from telemetry.models import MetricDefinition
from telemetry.read import series_read, series_read_entities
from telemetry.receivers.twin import samples_write
from tests.factories import EntityFactory

pytestmark = pytest.mark.django_db


def test_a_grouped_read_of_many_cards_equals_one_read_per_card_in_a_few_queries():
    metric, _ = MetricDefinition.objects.get_or_create(
        name="accelerator_utilization_ratio", defaults={"entity_kind": "accelerator"}
    )
    end = timezone.now().replace(microsecond=0)
    start = end - timedelta(hours=2)
    entities = [EntityFactory(key=f"gpu-001/gpu{i}") for i in range(5)]
    rows = [
        (metric.pk, e.pk, end.timestamp() - 60 * minute, (minute * (n + 1)) % 7 / 10)
        for n, e in enumerate(entities[:4])  # the fifth card has no data
        for minute in range(100)
    ]
    samples_write(rows)
    with CaptureQueriesContext(connection) as captured:
        grouped = series_read_entities(metric=metric, entities=entities, start=start, end=end)
    assert len(captured.captured_queries) <= 5  # data source, frames, watermarks, one per tier
    for entity in entities:
        one = series_read(metric=metric, entity=entity, start=start, end=end)
        assert grouped[entity.pk].points == one.points
        assert grouped[entity.pk].step_seconds == one.step_seconds
    assert grouped[entities[4].pk].points == []
    assert len(grouped[entities[0].pk].points) > 50
