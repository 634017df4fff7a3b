"""Queueing a what-if run: save it, then hand it to the ``simulation.run_whatif`` task.

The run itself is :func:`simulation.services.whatif_run.whatif_execute`, which the task calls;
keeping the two apart means the task module and this one never import each other.

The task is sent after commit and a broker that is down then is logged, not raised: the run
is saved (the command succeeded) and stays queued until the periodic sweep
(``simulation.sweep_whatif_runs``) sends it. The run's claim (``whatif_execute``) makes a
swept copy of a task that did arrive a no-op.
"""

from __future__ import annotations

from django.db import transaction

from cluster_portal.web.dispatch import dispatch_after_commit
from simulation.models import WhatIfRun
from simulation.tasks import run_whatif


@transaction.atomic
def whatif_create(
    *,
    cards: int,
    hardware: str,
    hours: float,
    seed: int,
    created_by,
    seeds: int = 3,
    trace_kind: str = "",
    trace_name: str = "",
    trace_text: str = "",
    serve_model: str = "",
) -> WhatIfRun:
    """Save a queued run and queue its task once the row is committed (never raising for the
    broker: the sweep sends what could not be sent)."""
    run = WhatIfRun.objects.create(
        cards=cards,
        hardware=hardware,
        hours=hours,
        seed=seed,
        seeds=seeds,
        trace_kind=trace_kind,
        trace_name=trace_name,
        trace_text=trace_text,
        serve_model=serve_model,
        created_by=created_by,
    )
    dispatch_after_commit(f"what-if run {run.pk}", lambda: run_whatif.delay(run.pk))
    return run
