"""The per-process attribution memo: an open interval's end is written at most every
``ATTRIBUTION_WRITE_SECONDS`` per card, and nothing a holder change needs is held back."""

from __future__ import annotations

import pytest

from telemetry.catalogue.known import KNOWN
from telemetry.models import AttributionInterval, Entity
from tests.telemetry.ingest.test_attribution import T0, at, dcgm, scrape

HELD = dcgm(("GPU-a", "acme-bank", "llama-70b-0"))


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    """Run each scrape's after-commit work (the memo learns only what committed)."""

    def run(text: str, when: float) -> dict:
        with django_capture_on_commit_callbacks(execute=True):
            return scrape(text, when)

    return run


@pytest.mark.django_db
def test_observations_of_one_holder_inside_the_write_period_touch_no_row(
    cluster, committed, settings, django_assert_max_num_queries
):
    settings.ATTRIBUTION_WRITE_SECONDS = 60
    committed(HELD, T0)
    committed(HELD, T0 + 15)  # learned from the database: the interval's written end is T0 + 15
    with django_assert_max_num_queries(50) as before:
        committed(HELD, T0 + 30)  # 15 s later: inside every card's period (45 to 60 s)
    assert not any("monitoring_attributioninterval" in q["sql"] for q in before.captured_queries)
    (row,) = AttributionInterval.objects.all()
    assert row.last_seen_at == at(T0 + 15)  # held back, less than 60 s behind


@pytest.mark.django_db
def test_the_held_back_end_is_written_when_due_with_its_observations_and_step(
    cluster, committed, settings
):
    settings.ATTRIBUTION_WRITE_SECONDS = 60
    for k in range(7):  # T0 … T0 + 90 every 15 s
        committed(HELD, T0 + 15 * k)
    (row,) = AttributionInterval.objects.all()
    end = row.last_seen_at.timestamp()
    assert T0 + 90 - 60 <= end <= T0 + 90  # written again when due: less than 60 s behind
    assert end > T0 + 15
    assert row.step_seconds == 15  # the scrape step, not the write period
    assert row.observations == (end - T0) / 15 + 1  # every observation up to the end counted


@pytest.mark.django_db
def test_a_holder_change_inside_the_write_period_is_written_at_once(cluster, committed, settings):
    settings.ATTRIBUTION_WRITE_SECONDS = 600
    committed(HELD, T0)
    committed(HELD, T0 + 15)
    committed(HELD, T0 + 30)
    committed(dcgm(("GPU-a", "panda", "train-7")), T0 + 45)
    old, new = AttributionInterval.objects.order_by("started_at")
    assert (old.pod, old.ended_at) == ("llama-70b-0", at(T0 + 45))
    assert (new.pod, new.started_at, new.ended_at) == ("train-7", at(T0 + 45), None)
    committed(dcgm(("GPU-a", "", "")), T0 + 60)  # seen free: ended at once too
    new.refresh_from_db()
    assert new.ended_at == at(T0 + 60)


@pytest.mark.django_db
def test_a_rolled_back_batch_teaches_the_memo_nothing(cluster, settings):
    settings.ATTRIBUTION_WRITE_SECONDS = 60
    scrape(HELD, T0)  # the test's transaction never commits: no after-commit work runs
    card = Entity.objects.get(key="GPU-a").pk
    assert AttributionInterval.objects.filter(entity_id=card).exists()  # written, uncommitted
    assert KNOWN.get_many("attribution", [(cluster.pk, card)]) == {}


@pytest.mark.django_db
def test_a_zero_write_period_writes_every_observation(cluster, committed, settings):
    settings.ATTRIBUTION_WRITE_SECONDS = 0
    for k in range(3):
        committed(HELD, T0 + 15 * k)
    (row,) = AttributionInterval.objects.all()
    assert (row.last_seen_at, row.observations) == (at(T0 + 30), 3)
