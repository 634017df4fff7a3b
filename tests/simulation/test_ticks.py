"""Twin ticks write the engine's metrics through the store, exactly once per sequence number."""

from __future__ import annotations

import pytest

from inventory.models import Accelerator, Workload
from simulation.engine import Engine
from simulation.models import TwinRun, TwinTick
from simulation.services import twin_tick
from simulation.services.resident import engine_rebuild
from telemetry.models import Entity, Frame, Sample
from tests.simulation.conftest import stored_values


@pytest.mark.django_db
def test_creating_a_run_registers_the_twins_inventory_and_workloads(twin_run):
    engine = Engine.load_state(bytes(twin_run.state))
    listing = engine.topology()
    cluster = twin_run.cluster
    assert Accelerator.objects.filter(node__cluster=cluster).count() == len(listing["cards"])
    assert Entity.objects.filter(cluster=cluster, kind="accelerator").count() == len(
        listing["cards"]
    )
    names = {w["name"] for w in engine.workloads()}
    assert set(Workload.objects.filter(cluster=cluster).values_list("name", flat=True)) == names
    assert not Entity.objects.filter(cluster=cluster, kind="workload", tenant__isnull=True).exists()


@pytest.mark.django_db
def test_a_tick_commits_the_steps_metrics_and_moves_the_sequence(twin_run):
    outcome = twin_tick(run_id=twin_run.pk, expected_seq=0)
    assert outcome.committed and outcome.seq == 1
    twin_run.refresh_from_db()
    assert twin_run.tick_seq == 1 and twin_run.sim_time == 60.0
    assert stored_values(twin_run.cluster) == outcome.samples > 0
    util = Frame.objects.get(metric__name="accelerator_utilization_ratio", resolution=0)
    assert util.layout.size == 256 and util.layout.kind == "accelerator"
    assert TwinTick.objects.get(run=twin_run).samples == outcome.samples


@pytest.mark.django_db
def test_the_same_tick_delivered_twice_writes_one_set_of_telemetry(twin_run):
    first = twin_tick(run_id=twin_run.pk, expected_seq=0)
    again = twin_tick(run_id=twin_run.pk, expected_seq=0)
    assert first.committed and not again.committed
    assert again.reason == "already committed"
    assert stored_values(twin_run.cluster) == first.samples
    assert TwinTick.objects.count() == 1


@pytest.mark.django_db
def test_a_tick_that_fails_midway_leaves_no_telemetry_and_no_progress(twin_run, monkeypatch):
    def crash(*args, **kwargs):
        raise RuntimeError("worker lost mid-tick")

    monkeypatch.setattr(TwinTick.objects, "create", crash)
    with pytest.raises(RuntimeError):
        twin_tick(run_id=twin_run.pk, expected_seq=0)
    twin_run.refresh_from_db()
    assert twin_run.tick_seq == 0 and twin_run.sim_time == 0.0
    assert stored_values(twin_run.cluster) == 0
    assert not Frame.objects.exists()
    monkeypatch.undo()
    assert twin_tick(run_id=twin_run.pk, expected_seq=0).committed


@pytest.mark.django_db
def test_ticks_continue_the_engine_exactly_as_an_uninterrupted_run(twin_run):
    reference = Engine.load_state(bytes(twin_run.state))
    for seq in range(3):
        twin_tick(run_id=twin_run.pk, expected_seq=seq)
        reference.step()
    twin_run.refresh_from_db()
    resumed = engine_rebuild(twin_run)  # checkpoint + journal: what another worker would see
    assert resumed.t == reference.t == 180.0
    assert resumed.summary() == reference.summary()
    assert list(resumed.step().rows()) == list(reference.step().rows())


@pytest.mark.django_db
def test_a_paused_run_does_not_tick(twin_run):
    TwinRun.objects.filter(pk=twin_run.pk).update(status=TwinRun.Status.PAUSED)
    assert twin_tick(run_id=twin_run.pk, expected_seq=0).reason == "paused"
    assert stored_values(twin_run.cluster) == 0


@pytest.mark.django_db
def test_a_pool_tick_writes_pool_metrics_and_keeps_its_own_sequence(twin_run):
    from simulation.services import twin_pool_tick

    assert twin_pool_tick(run_id=twin_run.pk, expected_seq=0).reason == "paused or not started"
    twin_tick(run_id=twin_run.pk, expected_seq=0)
    before = Sample.objects.filter(entity__kind="memory_pool").count()
    outcome = twin_pool_tick(run_id=twin_run.pk, expected_seq=0)
    assert outcome.committed
    assert twin_pool_tick(run_id=twin_run.pk, expected_seq=0).reason == "already committed"
    twin_run.refresh_from_db()
    assert (twin_run.tick_seq, twin_run.pool_seq) == (1, 1)
    pool_samples = Sample.objects.filter(entity__kind="memory_pool").count() - before
    assert pool_samples == outcome.samples > 0
    assert TwinTick.objects.filter(run=twin_run, kind="pool").count() == 1


@pytest.mark.django_db
def test_tick_lag_is_recorded_as_telemetry(twin_run):
    from datetime import timedelta

    from simulation.services.lag import tick_lag_record

    twin_tick(run_id=twin_run.pk, expected_seq=0)
    twin_run.refresh_from_db()
    later = twin_run.last_tick_at + timedelta(seconds=45)
    assert tick_lag_record(run=twin_run, now=later.timestamp()) == pytest.approx(35.0)
    assert Sample.objects.get(metric__name="twin_tick_lag_seconds").value == pytest.approx(35.0)


@pytest.mark.django_db
def test_a_run_seeds_the_hardware_catalogue_links_and_workload_slos(twin_run):
    from inventory.models import HardwareModel, Link

    cluster = twin_run.cluster
    assert HardwareModel.objects.filter(slug__in=["h100-sxm", "ascend-950dt"]).count() == 2
    assert cluster.hardware_model.slug == twin_run.scenario["topology"]["hardware"]
    card = Accelerator.objects.filter(node__cluster=cluster).first()
    assert card.hardware_model == cluster.hardware_model
    engine = Engine.load_state(bytes(twin_run.state))
    assert Link.objects.filter(cluster=cluster).count() == len(engine.topology()["links"])
    assert not Entity.objects.filter(cluster=cluster, kind="link", link__isnull=True).exists()
    service = engine.scenario.services[0]
    workload = Workload.objects.get(cluster=cluster, name=service.name)
    assert workload.slo_p99_ms == service.slo_p99_ms
    assert workload.cards_requested == service.tp * service.min_replicas


@pytest.mark.django_db(transaction=True)
def test_two_workers_ticking_at_once_commit_one_tick():
    import threading

    from django.db import connection

    from inventory.models import Cluster
    from simulation.engine import default_scenario
    from simulation.services import twin_run_create

    cluster = Cluster.objects.create(name="race", kind=Cluster.Kind.UNIFIED)
    run = twin_run_create(name="race", cluster=cluster, scenario=default_scenario(cards=128))
    outcomes = []
    barrier = threading.Barrier(2)

    def worker() -> None:
        try:
            barrier.wait()
            outcomes.append(twin_tick(run_id=run.pk, expected_seq=0))
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(o.committed for o in outcomes) == [False, True]
    assert TwinTick.objects.filter(run=run).count() == 1
    committed = next(o for o in outcomes if o.committed)
    assert stored_values(cluster) == committed.samples


@pytest.mark.django_db
def test_a_state_this_engine_cannot_read_pauses_the_run_with_the_reason_and_reset_clears_it(
    twin_run,
):
    from simulation.services import twin_run_control

    blob = bytes(twin_run.state)
    TwinRun.objects.filter(pk=twin_run.pk).update(state=blob[:6] + bytes([99]) + blob[7:])
    outcome = twin_tick(run_id=twin_run.pk, expected_seq=0)
    assert not outcome.committed and "newer than this engine reads" in outcome.reason
    twin_run.refresh_from_db()
    assert twin_run.status == TwinRun.Status.PAUSED
    assert "reset the run" in twin_run.last_error and twin_run.tick_seq == 0
    assert not Sample.objects.filter(entity__cluster=twin_run.cluster).exists()

    twin_run_control(run_id=twin_run.pk, action="reset")
    twin_run_control(run_id=twin_run.pk, action="start")
    twin_run.refresh_from_db()
    assert twin_run.last_error == ""
    assert twin_tick(run_id=twin_run.pk, expected_seq=0).committed
