"""A tick fanned out per supernode commits once and equals the single-worker tick."""

from __future__ import annotations

import pytest

from inventory.models import Cluster
from simulation.engine import default_scenario
from simulation.models import StagedPart, TwinRun
from simulation.services import tick_commit_staged, tick_stage_part, twin_run_create, twin_tick
from tests.simulation.conftest import stored_values
from tests.simulation.conftest import telemetry as stored

TICK_TIME = 1_780_000_000.0


def make_run(name: str) -> TwinRun:
    cluster = Cluster.objects.create(name=name, kind=Cluster.Kind.UNIFIED)
    return twin_run_create(name=name, cluster=cluster, scenario=default_scenario(cards=768, seed=5))


def telemetry(run: TwinRun) -> list[tuple]:
    return stored(run.cluster)


@pytest.mark.django_db
def test_fanned_out_tick_equals_the_single_worker_tick():
    single, fanned = make_run("single"), make_run("fanned")
    parts = fanned.cluster.supernodes.count()
    assert parts >= 2
    for seq in range(2):
        twin_tick(run_id=single.pk, expected_seq=seq, tick_time=TICK_TIME + 10 * seq)
        visible_before = stored_values(fanned.cluster)
        complete = [
            tick_stage_part(
                run_id=fanned.pk, expected_seq=seq, part=p, tick_time=TICK_TIME + 10 * seq
            )
            for p in reversed(range(parts))
        ]
        assert complete[:-1] == [False] * (parts - 1) and complete[-1] is True
        # Nothing of the tick is visible before the join commits it.
        assert stored_values(fanned.cluster) == visible_before
        assert tick_commit_staged(run_id=fanned.pk, expected_seq=seq, parts=parts).committed
    assert telemetry(fanned) == telemetry(single)
    single.refresh_from_db()
    fanned.refresh_from_db()
    assert fanned.tick_seq == single.tick_seq == 2
    assert not StagedPart.objects.exists()


@pytest.mark.django_db
def test_a_restaged_part_and_a_repeated_commit_change_nothing():
    run = make_run("retry")
    parts = run.cluster.supernodes.count()
    for p in range(parts):
        tick_stage_part(run_id=run.pk, expected_seq=0, part=p, tick_time=TICK_TIME)
    tick_stage_part(run_id=run.pk, expected_seq=0, part=0, tick_time=TICK_TIME)  # redelivered
    first = tick_commit_staged(run_id=run.pk, expected_seq=0, parts=parts)
    again = tick_commit_staged(run_id=run.pk, expected_seq=0, parts=parts)
    assert first.committed and not again.committed
    assert stored_values(run.cluster) == first.samples


@pytest.mark.django_db
def test_a_commit_waits_until_every_part_is_staged():
    run = make_run("partial")
    parts = run.cluster.supernodes.count()
    tick_stage_part(run_id=run.pk, expected_seq=0, part=0, tick_time=TICK_TIME)
    outcome = tick_commit_staged(run_id=run.pk, expected_seq=0, parts=parts)
    assert outcome.reason == "parts missing"
    assert stored_values(run.cluster) == 0
