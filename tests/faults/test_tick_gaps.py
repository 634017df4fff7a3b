"""Tick gaps in process: recorded once when ticks resume late, never for a pause or on time."""

from __future__ import annotations

from datetime import timedelta

import pytest

from inventory.models import Cluster
from simulation.engine import default_scenario
from simulation.models import TwinGap, TwinRun, TwinTick
from simulation.services import twin_run_control, twin_run_create, twin_tick
from simulation.services.gaps import GAP_METRIC
from telemetry.models import Sample
from tests.simulation.conftest import stored_values


@pytest.fixture
def ticked_run(db, settings):
    settings.TWIN_TICK_SECONDS = 10
    cluster = Cluster.objects.create(name="gap-unit", kind=Cluster.Kind.UNIFIED)
    run = twin_run_create(
        name="gap-unit", cluster=cluster, scenario=default_scenario(cards=64, seed=6)
    )
    assert twin_tick(run_id=run.pk, expected_seq=0).committed
    return run


def age_last_tick(run: TwinRun, seconds: float) -> None:
    run.refresh_from_db()
    TwinRun.objects.filter(pk=run.pk).update(
        last_tick_at=run.last_tick_at - timedelta(seconds=seconds)
    )


@pytest.mark.django_db
def test_a_tick_on_schedule_records_no_gap(ticked_run):
    age_last_tick(ticked_run, 10)  # exactly one interval later: on time
    assert twin_tick(run_id=ticked_run.pk, expected_seq=1).committed
    assert not TwinGap.objects.exists()


@pytest.mark.django_db
def test_a_late_tick_records_the_gap_once_and_steps_only_once(ticked_run):
    age_last_tick(ticked_run, 95)
    ticked_run.refresh_from_db()
    outcome = twin_tick(run_id=ticked_run.pk, expected_seq=1)
    assert outcome.committed
    gap = TwinGap.objects.get(run=ticked_run)
    assert gap.seq == 2 and gap.started_at == ticked_run.last_tick_at
    assert 95 <= gap.seconds < 100 and gap.missed_ticks == 9
    # One engine step, not ten: the missed time is not simulated after the fact.
    ticked_run.refresh_from_db()
    assert ticked_run.sim_time == 2 * 60.0
    point = Sample.objects.get(metric__name=GAP_METRIC[0])
    assert point.value == pytest.approx(gap.seconds)
    # The gap's sample counts as the tick's output.
    assert stored_values(ticked_run.cluster) == sum(
        TwinTick.objects.filter(run=ticked_run).values_list("samples", flat=True)
    )
    # A duplicate delivery of the same tick is a no-op: still one gap.
    assert not twin_tick(run_id=ticked_run.pk, expected_seq=1).committed
    assert TwinGap.objects.count() == 1


@pytest.mark.django_db
def test_a_paused_run_restarted_later_records_no_gap(ticked_run):
    twin_run_control(run_id=ticked_run.pk, action="pause")
    age_last_tick(ticked_run, 600)
    twin_run_control(run_id=ticked_run.pk, action="start")
    assert twin_tick(run_id=ticked_run.pk, expected_seq=1).committed
    assert not TwinGap.objects.exists()
