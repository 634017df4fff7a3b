"""Retention deletes only what the policy says is expired."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from telemetry.models import Entity, MetricDefinition, Rollup, Sample
from telemetry.receivers.twin import samples_write
from telemetry.store.compaction import rollups_compact
from telemetry.store.retention import RetentionPolicy, telemetry_prune

POLICY = RetentionPolicy(
    raw_accelerator=timedelta(hours=6),
    raw_other=timedelta(hours=48),
    rollup={60: timedelta(days=8), 3600: timedelta(days=90), 86400: timedelta(days=1100)},
)


@pytest.mark.django_db
def test_old_raw_accelerator_rows_go_first_and_rollups_stay(cluster):
    metric = MetricDefinition.objects.get(name="accelerator_utilization_ratio")
    card = Entity.objects.create(cluster=cluster, kind="accelerator", key="n/0")
    node = Entity.objects.create(cluster=cluster, kind="node", key="n")
    now = timezone.now()
    ages = [timedelta(hours=1), timedelta(hours=10), timedelta(days=3), timedelta(days=20)]
    rows = []
    for entity in (card, node):
        rows += [(metric.id, entity.id, (now - age).timestamp(), 1.0) for age in ages]
    with transaction.atomic():
        samples_write(rows)
    rollups_compact(now=now.timestamp())
    deleted = telemetry_prune(policy=POLICY, now=now)
    assert deleted["raw_accelerator"] == 3  # 10 h, 3 d and 20 d old
    assert deleted["raw_other"] == 2  # 3 d and 20 d old
    assert Sample.objects.filter(entity=card).count() == 1
    assert Sample.objects.filter(entity=node).count() == 2
    # Minute rollups older than 8 days are gone; hourly and daily ones remain for 20 days ago.
    assert deleted["rollup_60"] == 2
    cutoff = now - timedelta(days=8)
    assert not Rollup.objects.filter(resolution=60, bucket__lt=cutoff).exists()
    assert Rollup.objects.filter(resolution=3600, bucket__lt=cutoff).count() == 2


@pytest.mark.django_db
def test_raw_samples_are_kept_until_compaction_has_rolled_them_up(cluster):
    metric = MetricDefinition.objects.get(name="accelerator_utilization_ratio")
    card = Entity.objects.create(cluster=cluster, kind="accelerator", key="n/0")
    now = timezone.now()
    with transaction.atomic():
        samples_write([(metric.id, card.id, (now - timedelta(hours=10)).timestamp(), 1.0)])
    assert telemetry_prune(policy=POLICY, now=now)["raw_accelerator"] == 0
    rollups_compact(now=now.timestamp())
    assert telemetry_prune(policy=POLICY, now=now)["raw_accelerator"] == 1
    assert Rollup.objects.filter(resolution=60).count() == 1
