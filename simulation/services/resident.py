"""Engines kept resident in the worker between ticks; checkpoints plus a journal in the DB.

Loading and saving a 10,240-card engine costs tens of times its step, so a worker keeps each
run's engine in memory after a committed tick and uses it for the run's next tick when the
run's row still says it is at that point (same state epoch, tick and pool sequence numbers).
The database stays the truth, exactly once:

* every committed tick stores what it fed the engine (``TwinTick.inputs``: the traffic
  shares applied and the steps taken, or the pool seconds) in the tick's own transaction;
* ``TwinRun.state`` is a checkpoint that includes the ticks up to ``checkpoint_seq`` /
  ``checkpoint_pool_seq``. It is rewritten as soon as the ticks since the last one have
  earned it — their time x ``TWIN_CHECKPOINT_SHARE`` (0.25) covers what the last checkpoint
  cost — so saving stays within that share of the tick time at any cluster size, and at the
  latest every ``TWIN_CHECKPOINT_TICKS`` ticks (which bounds a rebuild's replay);
* a worker without the engine (another worker ticked the run, a restart, a SIGKILL) loads
  the checkpoint and replays the journal after it in commit order — the engine is
  deterministic, so this rebuilds the committed state bit for bit;
* an engine is put back in the cache only when its tick's transaction commits
  (``on_commit``); a tick that fails drops it, so an uncommitted step is never reused.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import OrderedDict

from django.conf import settings
from django.db import transaction
from django.db.models import Q

from simulation.engine import Engine
from simulation.models import TwinRun, TwinTick

_CACHE: OrderedDict[int, tuple[tuple[int, int, int], Engine]] = OrderedDict()
_LOCK = threading.Lock()  # thread pools share the cache; a run's row lock orders its ticks
# What a tick derives from the store and can carry to the next one (the serving counters'
# totals): tied to the engine object, so it lives exactly as long as the engine stays valid —
# dropped with it when a tick fails, empty after a rebuild (the tick reads the store again).
_MEMO: weakref.WeakKeyDictionary[Engine, dict] = weakref.WeakKeyDictionary()


class JournalGap(ValueError):
    """The ticks after the run's checkpoint are not all in the journal (cannot rebuild)."""


def _key(run: TwinRun) -> tuple[int, int, int]:
    return (run.state_epoch, run.tick_seq, run.pool_seq)


def engine_take(run: TwinRun) -> tuple[Engine, bool]:
    """The run's engine at its committed sequence numbers, and whether it was resident.

    Call with the run's row locked. The engine leaves the cache: the caller owns it until
    :func:`engine_keep` puts it back after a commit. ``ValueError`` when the checkpoint is
    unreadable or the journal has a gap.
    """
    with _LOCK:
        cached = _CACHE.pop(run.pk, None)
    if cached is not None and cached[0] == _key(run):
        return cached[1], True
    return engine_rebuild(run), False


def engine_rebuild(run: TwinRun) -> Engine:
    """Load the run's checkpoint and replay the journal of ticks committed after it."""
    engine = Engine.load_state(bytes(run.state))
    journal = list(
        TwinTick.objects.filter(run=run)
        .filter(
            Q(kind=TwinTick.Kind.SCHEDULER, seq__gt=run.checkpoint_seq)
            | Q(kind=TwinTick.Kind.POOL, seq__gt=run.checkpoint_pool_seq)
        )
        .order_by("id")
        .values_list("kind", "seq", "inputs")
    )
    for kind, first, last in (
        (TwinTick.Kind.SCHEDULER, run.checkpoint_seq, run.tick_seq),
        (TwinTick.Kind.POOL, run.checkpoint_pool_seq, run.pool_seq),
    ):
        seqs = [seq for k, seq, _ in journal if k == kind]
        if seqs != list(range(first + 1, last + 1)):
            raise JournalGap(
                f"journal: {kind} ticks {first + 1}..{last} after the checkpoint are not all "
                "recorded; reset the run"
            )
    for kind, _seq, inputs in journal:
        inputs_replay(engine, kind, inputs)
    return engine


def inputs_replay(engine: Engine, kind: str, inputs: dict) -> None:
    """Apply one journalled tick to ``engine`` without writing anything."""
    if kind == TwinTick.Kind.POOL:
        engine.step_memory_pool(float(inputs["seconds"]))
        return
    for name, share in inputs.get("shares", {}).items():
        engine.set_traffic_share(name, share)
    for _ in range(int(inputs["steps"])):
        engine.step()


def engine_memo(engine: Engine) -> dict:
    """A dict that lives with ``engine``: what ticks of this engine carry between them instead
    of reading it back from the store. Only the engine's own ticks write it, and a tick that
    does not commit drops the engine (and so its memo) with it."""
    with _LOCK:
        return _MEMO.setdefault(engine, {})


def engine_keep(run: TwinRun, engine: Engine) -> None:
    """Keep ``engine`` for the run's next tick once the current transaction commits.

    ``run`` carries the sequence numbers the commit will store.
    """
    key, run_id = _key(run), run.pk

    def store() -> None:
        with _LOCK:
            _CACHE[run_id] = (key, engine)
            _CACHE.move_to_end(run_id)
            while len(_CACHE) > settings.TWIN_RESIDENT_RUNS:
                _CACHE.popitem(last=False)

    transaction.on_commit(store)


def engine_forget(run_id: int | None = None) -> None:
    """Drop one run's resident engine (or all of them): the next tick rebuilds from the DB."""
    with _LOCK:
        if run_id is None:
            _CACHE.clear()
        else:
            _CACHE.pop(run_id, None)


def checkpoint_if_due(run: TwinRun, engine: Engine, *, force: bool = False) -> list[str]:
    """Save the engine as the run's checkpoint when it is due (see the module docstring) or
    ``force``; returns the fields to save with the run."""
    since = run.tick_seq + run.pool_seq - run.checkpoint_seq - run.checkpoint_pool_seq
    if since <= 0 and not force:
        return []
    share = settings.TWIN_CHECKPOINT_SHARE  # 0 disables the time rule (count only)
    earned = share > 0 and since * (run.last_tick_ms or 0.0) * share >= run.checkpoint_ms
    if not (force or since >= settings.TWIN_CHECKPOINT_TICKS or earned):
        return []
    started = time.perf_counter()
    run.state = engine.save_state()
    run.checkpoint_ms = (time.perf_counter() - started) * 1000
    run.checkpoint_seq, run.checkpoint_pool_seq = run.tick_seq, run.pool_seq
    return ["state", "checkpoint_seq", "checkpoint_pool_seq", "checkpoint_ms"]
