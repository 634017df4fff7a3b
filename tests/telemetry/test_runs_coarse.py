"""The 15-minute fast path of ``runs_under`` answers what the minute-by-minute fold answers,
on an awkward fixture: cards busy throughout (answered without minute detail), busy but for
one reading under the threshold — inside a 15-minute bucket, in the uncompacted tail, just
before the span starts in the span's first bucket — exactly at the threshold, busy with a
hole, readings that stopped 20 minutes ago, none at all; idle throughout (runs from the
buckets alone), idle with a long and a short hole, with two readings in some minutes, with
readings that stopped; read raw and from minute rollups, the 15-minute watermark behind the
newest data."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from telemetry.models import MetricDefinition
from telemetry.read import runs_under
from telemetry.read.local.runs import runs_under_grouped
from telemetry.read.local.runs_coarse import span_classes
from telemetry.read.local.series import choose_source
from telemetry.receivers.twin import samples_write
from telemetry.store.compaction import rollups_compact
from telemetry.store.samples import watermarks
from tests.factories import EntityFactory
from tests.telemetry.test_runs_under import _python

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the statements are PostgreSQL's"),
]
THRESHOLD = 0.05
BUSY = 0.6
MINUTES = 420


def _value(card: int, minute: int, span_start: int) -> float | None:
    """Card ``card``'s reading ``minute`` minutes before the end (None: no reading)."""
    if card == 0:
        return BUSY  # busy throughout: the fast path
    if card == 1:
        return 0.01 if minute == 200 else BUSY  # one under reading inside a 15-minute bucket
    if card == 2:
        return 0.01 if minute == 3 else BUSY  # one under reading in the uncompacted tail
    if card == 3:
        # one under reading a minute before the span starts, in the span's first bucket
        return 0.01 if minute == span_start + 1 else BUSY
    if card == 4:
        return THRESHOLD  # exactly at the threshold is not under: busy
    if card == 5:
        return None if 100 <= minute < 130 else BUSY  # busy with a half-hour hole
    if card == 6:
        return BUSY if minute >= 20 else None  # readings stopped 20 minutes ago
    if card == 7:
        return None  # no reading at all
    if card == 8:
        return 0.01 if (minute // 7) % 3 == 0 else BUSY  # idle and busy stretches
    if card == 9:
        return 0.01  # idle throughout: the fast path's other half
    if card == 10:
        return None if 150 <= minute < 170 else 0.02  # idle with a 20-minute hole
    if card == 11:
        return None if 40 <= minute < 43 else 0.03  # idle with a three-minute hole
    return 0.01 if minute >= 20 else None  # 12: idle, readings stopped 20 minutes ago


@pytest.fixture
def store():
    metric, _ = MetricDefinition.objects.get_or_create(
        name="accelerator_utilization_ratio", defaults={"entity_kind": "accelerator"}
    )
    now = timezone.now()
    # On a 15-minute edge, so card 3's reading shares the span's first 15-minute bucket.
    end = now.replace(minute=now.minute // 15 * 15, second=0, microsecond=0)
    cards = [EntityFactory(key=f"gpu-009/gpu{i}") for i in range(13)]
    return metric, end, cards


def _write(metric, end, cards, span_start: int) -> None:
    rows = []
    for n, card in enumerate(cards):
        for minute in range(MINUTES):
            value = _value(n, minute, span_start)
            if value is not None:
                rows.append((metric.pk, card.pk, end.timestamp() - 60 * minute - 17, value))
            if value is not None and n == 11 and minute % 50 == 0:  # two readings a minute
                rows.append((metric.pk, card.pk, end.timestamp() - 60 * minute - 41, value))
    samples_write(rows)
    # Compacted up to 20 minutes ago: the 15-minute watermark lies behind the newest data.
    rollups_compact(now=end.timestamp() - 20 * 60)


@pytest.mark.parametrize("span_minutes", [400, 240], ids=["minute rollups", "raw"])
def test_the_fast_path_answers_what_the_minute_fold_answers(store, span_minutes):
    metric, end, cards = store
    span_start = span_minutes - 7  # not on a 15-minute edge
    _write(metric, end, cards, span_start)
    since = end - timedelta(minutes=span_start)
    spans = [(card, since) for card in cards]
    spans.append((cards[0], end - timedelta(minutes=50)))  # a later holding of a busy card
    marks = watermarks()
    assert marks[900] < end - timedelta(minutes=20)
    _source, resolution, step = choose_source(since, end)
    assert resolution == (60 if span_minutes == 400 else 0)
    busy, idle = span_classes(
        metric=metric, spans=spans, first=since, end=end, threshold=THRESHOLD,
        resolution=resolution, step=step, marks=marks,
    )  # fmt: skip
    # Busy or idle throughout, read after the start: answered without the minute fold.
    assert busy == {0, 4, 5, 6, 13} and idle == {9, 10, 11, 12}
    found = runs_under(metric=metric, spans=spans, end=end, threshold=THRESHOLD)
    fold = runs_under_grouped(
        metric=metric, spans=spans, end=end, threshold=THRESHOLD, read_from=since
    )
    assert found == fold
    assert found == _python(metric, spans, end)
    busy, inside, tail, before, at, holed, stopped, none, mixed = found[:9]
    idle, idle_holed, idle_short_hole, idle_stopped, later = found[9:]
    assert busy.measured and busy.runs == [] and later.measured and later.runs == []
    assert len(inside.runs) == 1 and len(tail.runs) == 1 and tail.runs[0].current is False
    assert before.measured and before.runs == []  # its under reading is before the span
    assert at.runs == [] and holed.runs == [] and stopped.measured and stopped.runs == []
    assert not none.measured and len(mixed.runs) > 10
    assert len(idle.runs) == 1 and idle.runs[0].current
    assert len(idle_holed.runs) == 2 and len(idle_short_hole.runs) == 2
    assert len(idle_stopped.runs) == 1


def test_a_reading_over_the_threshold_in_an_idle_card_sends_it_to_the_fold(store):
    metric, end, cards = store
    rows = [(metric.pk, cards[0].pk, end.timestamp() - 60 * m - 17, 0.01) for m in range(400)]
    rows[250] = (metric.pk, cards[0].pk, rows[250][2], 0.9)
    samples_write(rows)
    rollups_compact(now=end.timestamp() - 20 * 60)
    since = end - timedelta(minutes=390)
    _source, resolution, step = choose_source(since, end)
    assert span_classes(
        metric=metric, spans=[(cards[0], since)], first=since, end=end, threshold=THRESHOLD,
        resolution=resolution, step=step, marks=watermarks(),
    ) == (set(), set())  # fmt: skip
    (only,) = runs_under(metric=metric, spans=[(cards[0], since)], end=end, threshold=THRESHOLD)
    assert len(only.runs) == 2


def test_without_a_15_minute_watermark_every_span_is_folded(store):
    metric, end, cards = store
    samples_write([(metric.pk, cards[0].pk, end.timestamp() - 60 * m, BUSY) for m in range(30)])
    since = end - timedelta(minutes=25)
    _source, resolution, step = choose_source(since, end)
    assert span_classes(
        metric=metric, spans=[(cards[0], since)], first=since, end=end, threshold=THRESHOLD,
        resolution=resolution, step=step, marks=watermarks(),
    ) == (set(), set())  # fmt: skip
    (only,) = runs_under(metric=metric, spans=[(cards[0], since)], end=end, threshold=THRESHOLD)
    assert only.measured and only.runs == []


@pytest.mark.parametrize("end_minute", [0, 7], ids=["on a 15-minute edge", "inside a bucket"])
def test_a_closed_hour_the_rollups_cover_is_classified_from_its_buckets_alone(store, end_minute):
    """The ledger's read: every reading of the hour is under the 15-minute watermark, so no
    tail is read; a bucket that starts after a span's start but whose readings all fall after
    the read's end does not make the span measured."""
    metric, now, cards = store
    hour_end = now - timedelta(hours=1, minutes=end_minute)
    rows = []
    for n, card in enumerate(cards):
        for minute in range(300):
            ts = now.timestamp() - 60 * minute - 17
            value = _value(n, minute, 10_000)
            if n == 7:  # readings only after the hour's end
                value = 0.01 if ts >= hour_end.timestamp() + 60 else None
            if value is not None:
                rows.append((metric.pk, card.pk, ts, value))
    samples_write(rows)
    rollups_compact(now=now.timestamp())
    marks = watermarks()
    assert marks[900] >= hour_end
    start = hour_end - timedelta(hours=1)
    spans = [(card, start) for card in cards]
    # Starts a minute before the hour's last (or straddling) 15-minute bucket.
    spans.append((cards[7], hour_end - timedelta(minutes=16 if end_minute == 0 else 8)))
    spans.append((cards[9], hour_end - timedelta(minutes=40)))  # a later holding, idle
    _source, resolution, step = choose_source(start, hour_end)
    busy, idle = span_classes(
        metric=metric, spans=spans, first=start, end=hour_end, threshold=THRESHOLD,
        resolution=resolution, step=step, marks=marks,
    )  # fmt: skip
    assert {0, 4} <= busy and {9, 14} <= idle and 13 not in busy | idle
    found = runs_under(metric=metric, spans=spans, end=hour_end, threshold=THRESHOLD)
    fold = runs_under_grouped(
        metric=metric, spans=spans, end=hour_end, threshold=THRESHOLD, read_from=start
    )
    assert found == fold == _python(metric, spans, hour_end)
    assert not found[13].measured and found[9].runs and found[14].runs
