"""Runs of readings under a threshold found in the database answer what the same rule in
Python answers over the series read of each card: busy readings and holes end a run, a run
covers one cadence past its last reading, each span starts where asked; raw samples and
compacted rollups alike."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from telemetry.models import MetricDefinition
from telemetry.read import runs_under, series_read_entities
from telemetry.read.local.runs import runs_of_series
from telemetry.receivers.twin import samples_write
from telemetry.store.compaction import rollups_compact
from tests.factories import EntityFactory

pytestmark = pytest.mark.django_db
THRESHOLD = 0.05


def _metric() -> MetricDefinition:
    metric, _ = MetricDefinition.objects.get_or_create(
        name="accelerator_utilization_ratio", defaults={"entity_kind": "accelerator"}
    )
    return metric


def _cards(metric, end, minutes: int, every: int = 60):
    """Six cards: idle, busy, idle with a busy minute, idle with a hole, a lone reading,
    none; plus a seeded random walk around the threshold."""
    rng = random.Random(7)
    cards = [EntityFactory(key=f"gpu-001/gpu{i}") for i in range(7)]
    rows = []
    for n, card in enumerate(cards):
        for step in range(minutes * 60 // every):
            ts = end.timestamp() - every * step
            value = {
                0: 0.01,
                1: 0.7,
                2: 0.9 if step == 40 else 0.02,
                3: 0.02,
                6: rng.choice((0.01, 0.02, 0.04, 0.3)),
            }.get(n)
            if value is None or (n == 3 and 50 <= step < 58):
                continue
            rows.append((metric.pk, card.pk, ts, value))
    rows.append((metric.pk, cards[4].pk, end.timestamp() - 300, 0.0))
    samples_write(rows)
    return cards


def _python(metric, spans, end):
    first = min(since for _e, since in spans)
    read = series_read_entities(
        metric=metric, entities=[e for e, _s in spans], start=first, end=end
    )
    return [runs_of_series(read[e.pk], since, THRESHOLD) for e, since in spans]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the statement is PostgreSQL's")
@pytest.mark.parametrize(("minutes", "compacted"), [(120, False), (400, True)])
def test_runs_found_in_the_database_equal_the_python_rule(minutes, compacted):
    metric = _metric()
    end = timezone.now().replace(second=0, microsecond=0)
    cards = _cards(metric, end, minutes)
    if compacted:
        rollups_compact(now=end.timestamp() + 600)
    spans = [(card, end - timedelta(minutes=minutes - 10)) for card in cards]
    spans.append((cards[0], end - timedelta(minutes=30)))  # a later holding of the same card
    with CaptureQueriesContext(connection) as captured:
        found = runs_under(metric=metric, spans=spans, end=end, threshold=THRESHOLD)
    # Constant whatever the cards: sources, frames, marks, classes, idle and fold statements
    # (each of the last two in a savepoint with its work_mem set and restored), and the
    # idle cards' second walk where some of them have holes.
    assert len(captured.captured_queries) <= 15
    assert found == _python(metric, spans, end)
    idle, busy, broken, holed, lone, none, _walk, later = found
    assert len(idle.runs) == 1 and idle.runs[0].current
    assert busy.measured and busy.runs == []
    assert len(broken.runs) == 2 and len(holed.runs) == 2
    assert lone.measured and len(lone.runs) == 1
    assert not none.measured
    assert later.runs[0].start >= end - timedelta(minutes=31)


@pytest.mark.parametrize("vendor", ["postgresql", "sqlite"], ids=["statements", "series path"])
def test_spans_given_as_plain_values_answer_what_whole_rows_answer(monkeypatch, vendor):
    """``span_entities``' records (no model rows) read the same runs as the entities
    themselves, in the store's statements and on the other databases' series path (which
    fetches the whole rows it needs)."""
    from types import SimpleNamespace

    from telemetry.read import SpanEntity, span_entities
    from telemetry.read.local import runs

    if connection.vendor != "postgresql" and vendor == "postgresql":
        pytest.skip("the statements are PostgreSQL's")
    metric = _metric()
    end = timezone.now().replace(second=0, microsecond=0)
    cards = _cards(metric, end, 400)
    rollups_compact(now=end.timestamp() - 1200)
    since = end - timedelta(minutes=390)
    plain = span_entities(card.pk for card in cards)
    assert all(isinstance(e, SpanEntity) for e in plain.values())
    whole = span_entities((card.pk for card in cards), {cards[0].cluster_id})
    assert whole[cards[0].pk] == cards[0]
    monkeypatch.setattr(runs, "connection", SimpleNamespace(vendor=vendor))
    given = runs_under(
        metric=metric, spans=[(plain[c.pk], since) for c in cards], end=end, threshold=THRESHOLD
    )
    expected = _python(metric, [(card, since) for card in cards], end)
    assert given == expected
    assert given[0].runs and given[1].measured and not given[1].runs and not given[5].measured


def test_cards_already_known_are_taken_as_they_are_but_whole_clusters_are_read_whole(
    django_assert_num_queries,
):
    """Card holdings carry each card's id, cluster, kind and key: ``span_entities`` takes
    those without reading the cards again, except for the clusters whose reads need whole
    rows (a PromQL server's)."""
    from telemetry.read import SpanEntity, span_entities

    metric = _metric()
    end = timezone.now().replace(second=0, microsecond=0)
    cards = _cards(metric, end, 10)
    known = [SpanEntity(c.pk, c.cluster_id, c.kind, c.key) for c in cards]
    with django_assert_num_queries(0):
        taken = span_entities((c.pk for c in cards), known=known)
    assert taken == {e.pk: e for e in known}
    with django_assert_num_queries(1):  # only the card nobody knew is read
        mixed = span_entities((c.pk for c in cards), known=known[1:])
    assert mixed[cards[0].pk] == known[0] and mixed[cards[1].pk] is known[1]
    whole = span_entities((c.pk for c in cards), {cards[0].cluster_id}, known=known)
    assert whole[cards[0].pk] == cards[0]  # the model row, not the known values
