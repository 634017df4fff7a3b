"""The engine stays resident between ticks; checkpoint + journal rebuild it exactly, anywhere."""

from __future__ import annotations

import pytest

from simulation.engine import Engine
from simulation.models import TwinRun, TwinTick
from simulation.services import resident, twin_pool_tick, twin_run_control, twin_tick


@pytest.fixture(autouse=True)
def _no_resident_engines(settings):
    settings.TWIN_CHECKPOINT_SHARE = 0.0  # checkpoints by count only, unless a test says so
    resident.engine_forget()
    yield
    resident.engine_forget()


def _mixed_ticks(run: TwinRun, ticks: int, commits) -> None:
    """Scheduler ticks with a pool tick after every second one, each committed on its own."""
    run.refresh_from_db()
    for _ in range(ticks):
        with commits(execute=True):
            assert twin_tick(run_id=run.pk, expected_seq=run.tick_seq).committed
        run.refresh_from_db()
        if run.tick_seq % 2 == 0:
            with commits(execute=True):
                assert twin_pool_tick(run_id=run.pk, expected_seq=run.pool_seq).committed
            run.refresh_from_db()


@pytest.mark.django_db
def test_the_next_tick_uses_the_resident_engine_without_loading_the_state(
    twin_run, monkeypatch, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        assert twin_tick(run_id=twin_run.pk, expected_seq=0).committed

    def refuse(*_args, **_kwargs):
        raise AssertionError("a resident engine must not be loaded again")

    monkeypatch.setattr(Engine, "load_state", refuse)
    for seq in range(1, 4):
        with django_capture_on_commit_callbacks(execute=True):  # runs them at each commit
            assert twin_tick(run_id=twin_run.pk, expected_seq=seq).committed
    twin_run.refresh_from_db()
    assert twin_run.tick_seq == 4 and twin_run.sim_time == 240.0
    assert twin_run.checkpoint_seq == 0  # nothing saved yet: the journal holds ticks 1..4
    assert (
        list(TwinTick.objects.filter(run=twin_run).values_list("inputs", flat=True))
        == [{"shares": {}, "steps": 1}] * 4
    )


@pytest.mark.django_db
def test_checkpoint_and_journal_rebuild_the_resident_engine_bit_for_bit(
    twin_run, settings, django_capture_on_commit_callbacks
):
    settings.TWIN_CHECKPOINT_TICKS = 4
    _mixed_ticks(twin_run, 7, django_capture_on_commit_callbacks)
    twin_run.refresh_from_db()
    assert 0 < twin_run.checkpoint_seq < twin_run.tick_seq  # a checkpoint, then journal
    kept, was_resident = resident.engine_take(twin_run)
    assert was_resident
    rebuilt = resident.engine_rebuild(twin_run)  # what a fresh worker does
    assert rebuilt.t == kept.t == 420.0
    assert rebuilt.save_state() == kept.save_state()


@pytest.mark.django_db
def test_ticks_on_a_worker_without_the_engine_continue_exactly_as_one_worker(
    twin_run, settings, django_capture_on_commit_callbacks
):
    settings.TWIN_CHECKPOINT_TICKS = 3
    reference = Engine.load_state(bytes(twin_run.state))
    twin_run.refresh_from_db()
    for seq in range(6):
        if seq % 2:
            resident.engine_forget()  # every other tick lands on a worker without it
        with django_capture_on_commit_callbacks(execute=True):
            assert twin_tick(run_id=twin_run.pk, expected_seq=seq).committed
        reference.step()
    twin_run.refresh_from_db()
    assert resident.engine_rebuild(twin_run).save_state() == reference.save_state()


@pytest.mark.django_db
def test_a_tick_that_fails_after_stepping_never_leaves_its_engine_behind(
    twin_run, monkeypatch, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        assert twin_tick(run_id=twin_run.pk, expected_seq=0).committed

    def crash(*args, **kwargs):
        raise RuntimeError("database lost at commit")

    with monkeypatch.context() as patched:
        patched.setattr(TwinTick.objects, "create", crash)
        with pytest.raises(RuntimeError):
            twin_tick(run_id=twin_run.pk, expected_seq=1)  # stepped, then rolled back
    with django_capture_on_commit_callbacks(execute=True):
        assert twin_tick(run_id=twin_run.pk, expected_seq=1).committed
    twin_run.refresh_from_db()
    assert twin_run.sim_time == 120.0  # two steps, not three
    assert resident.engine_take(twin_run)[0].t == 120.0


@pytest.mark.django_db
def test_a_reset_drops_the_resident_engine(twin_run, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        assert twin_tick(run_id=twin_run.pk, expected_seq=0).committed
    twin_run_control(run_id=twin_run.pk, action="reset")
    with django_capture_on_commit_callbacks(execute=True):
        assert twin_tick(run_id=twin_run.pk, expected_seq=1).committed
    twin_run.refresh_from_db()
    assert twin_run.sim_time == 60.0  # from the reset state, not the kept one at 60 s
    assert twin_run.checkpoint_seq == 1 and twin_run.state_epoch == 1


@pytest.mark.django_db
def test_a_journal_with_a_gap_pauses_the_run_naming_the_problem(twin_run):
    assert twin_tick(run_id=twin_run.pk, expected_seq=0).committed
    assert twin_tick(run_id=twin_run.pk, expected_seq=1).committed
    TwinTick.objects.filter(run=twin_run, seq=1).delete()
    outcome = twin_tick(run_id=twin_run.pk, expected_seq=2)
    assert not outcome.committed and "not all recorded" in outcome.reason
    twin_run.refresh_from_db()
    assert twin_run.status == TwinRun.Status.PAUSED and "reset the run" in twin_run.last_error


@pytest.mark.django_db
def test_a_checkpoint_waits_until_the_ticks_since_the_last_one_have_paid_for_it(twin_run, settings):
    settings.TWIN_CHECKPOINT_SHARE = 0.25
    settings.TWIN_CHECKPOINT_TICKS = 100
    run = TwinRun.objects.get(pk=twin_run.pk)
    engine = Engine.load_state(bytes(run.state))
    run.checkpoint_ms, run.last_tick_ms = 100.0, 100.0  # a checkpoint costs one tick's time
    for ticks in range(1, 4):
        run.tick_seq = ticks
        assert resident.checkpoint_if_due(run, engine) == []  # 25% of 1..3 ticks < 100 ms
    run.tick_seq = 4
    assert "state" in resident.checkpoint_if_due(run, engine)  # 25% of 4 ticks pays it
    assert run.checkpoint_seq == 4 and run.checkpoint_ms > 0
    settings.TWIN_CHECKPOINT_TICKS = 2
    run.tick_seq, run.checkpoint_ms = 6, 1e9
    assert "state" in resident.checkpoint_if_due(run, engine)  # the cap bounds the replay


@pytest.mark.django_db
def test_serving_counters_keep_counting_across_resident_and_rebuilt_engines(
    twin_run, django_capture_on_commit_callbacks
):
    from telemetry.models import Sample

    for seq in range(5):
        if seq == 3:
            resident.engine_forget()  # this tick's worker reads the totals from the store
        with django_capture_on_commit_callbacks(execute=True):
            assert twin_tick(run_id=twin_run.pk, expected_seq=seq).committed
    served = Sample.objects.filter(metric__name="serving_requests_success_total")
    keys = set(served.values_list("entity__key", flat=True))
    assert keys, "the run's services export counters"
    grew = 0
    for key in keys:
        values = list(served.filter(entity__key=key).order_by("ts").values_list("value", flat=True))
        assert len(values) == 5
        assert all(b >= a for a, b in zip(values, values[1:], strict=False)), values  # no reset
        grew += values[-1] > values[0]
    assert grew


@pytest.mark.django_db
def test_an_engine_memo_lives_with_its_engine_only(twin_run):
    engine = Engine.load_state(bytes(twin_run.state))
    resident.engine_memo(engine)["carried"] = 1
    assert resident.engine_memo(engine) == {"carried": 1}
    assert resident.engine_memo(Engine.load_state(bytes(twin_run.state))) == {}
