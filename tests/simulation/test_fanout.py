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


def test_a_staged_part_survives_its_byte_format_unchanged():
    import numpy as np

    from simulation.services.staged_format import part_bytes, part_from_bytes

    payload = {
        "parts": 3,
        "steps": [
            {
                "ts": 1_780_000_000.25,
                "rows": [("cluster_power_watts", "cluster", "cluster", float("nan"))],
                "dense": {
                    "accelerator": (
                        5,
                        np.array([1, 3]),
                        {"util": np.array([0.5, 0.25]), "state": np.array([1.0, np.nan])},
                    )
                },
            }
        ],
        "state": b"\x00engine\xff",
        "keys": {"accelerator": ["sn0/a", "sn0/b", "sn1/c", "sn1/d", "sn2/e"]},
    }
    back = part_from_bytes(part_bytes(payload))
    assert back["parts"] == 3 and back["state"] == payload["state"]
    assert back["keys"] == payload["keys"]
    step = back["steps"][0]
    assert step["ts"] == payload["steps"][0]["ts"]
    ((name, kind, key, value),) = step["rows"]
    assert (name, kind, key) == ("cluster_power_watts", "cluster", "cluster") and value != value
    size, positions, values = step["dense"]["accelerator"]
    assert size == 5 and positions.tolist() == [1, 3]
    assert values["util"].tolist() == [0.5, 0.25]
    assert np.isnan(values["state"][1])


@pytest.mark.django_db
def test_a_part_staged_in_an_old_format_is_dropped_and_staged_again():
    import pickle
    import zlib

    run = make_run("upgrade")
    parts = run.cluster.supernodes.count()
    for p in range(parts):
        tick_stage_part(run_id=run.pk, expected_seq=0, part=p, tick_time=TICK_TIME)
    # A part left by the previous version (a pickle): never unpickled, refused by name.
    StagedPart.objects.filter(run=run, part=1).update(
        payload=zlib.compress(pickle.dumps({"steps": []}), 1)
    )
    outcome = tick_commit_staged(run_id=run.pk, expected_seq=0, parts=parts)
    assert not outcome.committed and "unreadable" in outcome.reason
    assert not StagedPart.objects.filter(run=run).exists()
    for p in range(parts):
        tick_stage_part(run_id=run.pk, expected_seq=0, part=p, tick_time=TICK_TIME)
    assert tick_commit_staged(run_id=run.pk, expected_seq=0, parts=parts).committed
