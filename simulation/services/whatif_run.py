"""What-if runs: the engine's split-vs-unified comparison and its ablation, in the background.

Every row gets the identical scenario (as the ``compare`` CLI builds it), on the same card
count. The rows are the engine's ablation (``ablation.ablation_scenarios``, the very steps
``compare --ablate`` and ``run_ablation`` run): split → +time-sharing → +preemption/elastic →
+pooled memory → unified. Its first and last rows *are* the split and unified policies (their
presets), so the side-by-side table and the ablation come from the same five runs. The runs
step the engine themselves so they can record a down-sampled per-step series for the charts
and report progress to the database as they go.

Honest comparisons (issue 25 part 4): split and unified also run on ``run.seeds - 1`` further
seeds (the same trace and model), so the side-by-side figures are means over the seeds with
their range and a 95% confidence interval, and the paired unified - split difference has its
own spread. The ablation and the charts are the first seed's.
"""

from __future__ import annotations

import dataclasses
import math
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import numpy as np
from django.db.models import Q
from django.utils import timezone

from simulation.engine import Engine, Scenario, default_scenario
from simulation.engine.ablation import ablation_scenarios
from simulation.engine.catalog import get_hardware, get_model, min_tensor_parallel
from simulation.engine.compare import apply_inference_trace, apply_training_trace
from simulation.engine.perf.inference import decode_seconds_per_token
from simulation.engine.scenario.defaults import size_services
from simulation.engine.scenario.features import Features
from simulation.engine.spread import combine
from simulation.models import WhatIfRun
from simulation.services.catalog import catalog_models_register

POLICIES = ("split", "unified")
# The run_whatif task's Celery limits (the claim trusts the hard one: past it no execution of
# a run can still be alive).
RUN_WHATIF_SOFT_TIME_LIMIT = 1200
RUN_WHATIF_TIME_LIMIT = 1260
MAX_POINTS = 240
# Per-step cluster figures charted side by side (names from the metric catalogue).
SERIES_METRICS = (
    "cluster_utilization_allocated_ratio",
    "cluster_utilization_busy_ratio",
    "cluster_training_samples_per_second",
    "cluster_inference_tokens_per_second",
    "cluster_hbm_live_ratio",
    "cluster_facility_power_watts",
)
PROGRESS_EVERY_S = 0.5  # wall seconds between progress writes: live enough, few UPDATEs
FEATURE_NAMES = ("time_sharing", "preemption", "elastic", "pooled_memory", "weight_cache",
                 "prefix_reuse")  # fmt: skip


INFERENCE_PEAK_FRACTION = 0.45  # default_scenario's: peak replicas fill 45% of the cards


def serve_model_everywhere(scen: Scenario, model_id: str) -> Scenario:
    """Every inference service serves ``model_id`` (a catalog or day-0 model).

    TP is the smallest power of two whose weights fit and whose batch-1 TPOT leaves 40% of the
    service's TPOT target for batching (the default scenario's rule); request rates are then
    re-derived from the perf model so peak replicas fill the same share of the cluster.
    """
    hw = get_hardware(scen.topology.hardware)
    model = get_model(model_id)
    services = []
    for svc in scen.services:
        tp = min_tensor_parallel(model, hw)
        context = svc.prompt_tokens_mean + svc.output_tokens_mean / 2
        while (
            tp < 64
            and float(decode_seconds_per_token(model, hw, tp, 1, context)) * 1e3
            > 0.6 * svc.slo_tpot_ms
        ):
            tp *= 2
        services.append(dataclasses.replace(svc, model=model.id, tp=tp, ep=1))
    cards = scen.topology.cards
    budget = np.full(len(services), INFERENCE_PEAK_FRACTION * cards / max(len(services), 1))
    peaks = np.array([1.0 + (s.peak_to_trough - 1) / (s.peak_to_trough + 1) for s in services])
    size_services(services, hw, scen.policy, budget, peaks)
    return Scenario.from_dict(dataclasses.replace(scen, services=services).to_dict())


def build_scenario(
    *,
    cards: int,
    hardware: str,
    hours: float,
    seed: int,
    trace_kind: str,
    trace_text: str,
    serve_model: str = "",
) -> Scenario:
    """The shared workload, as ``compare`` builds it but on the chosen hardware (and model).

    A trace is handed to the engine's readers through a temporary file. Raises ``ValueError``
    (``TraceError`` naming line and column for a bad row) like the engine does. Day-0 models
    are registered first, so a model added through the portal is usable at once.
    """
    catalog_models_register()
    scen = default_scenario(cards, seed, hardware=hardware, hours=hours)
    if serve_model and trace_kind != "azure":
        scen = serve_model_everywhere(scen, serve_model)
    if not trace_kind:
        return scen
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "trace.csv"
        path.write_text(trace_text, encoding="utf-8")
        if trace_kind == "azure":
            return apply_inference_trace(scen, path, model=serve_model or None)
        return apply_training_trace(scen, path, hours * 3600.0)


def _build(run: WhatIfRun, seed: int) -> Scenario:
    """The run's scenario on ``seed`` (the same trace and model on every seed)."""
    return build_scenario(
        cards=run.cards,
        hardware=run.hardware,
        hours=run.hours,
        seed=seed,
        trace_kind=run.trace_kind,
        trace_text=run.trace_text,
        serve_model=run.serve_model,
    )


def run_series(
    scen: Scenario, hours: float, progress: Callable[[int, int], None]
) -> tuple[dict, dict[str, list[float]], list[float]]:
    """Run ``scen`` as it is: its summary, down-sampled cluster series and simulated hours."""
    engine = Engine(Scenario.from_dict(scen.to_dict()))
    steps = max(math.ceil(hours * 3600.0 / scen.step_seconds - 1e-9), 1)
    every = max(1, math.ceil(steps / MAX_POINTS))
    series: dict[str, list[float]] = {m: [] for m in SERIES_METRICS}
    t_hours: list[float] = []
    for i in range(steps):
        snap = engine.step()
        if i % every == 0 or i == steps - 1:
            t_hours.append(round(engine.t / 3600.0, 4))
            for m in SERIES_METRICS:
                series[m].append(float(snap.cluster.get(m, float("nan"))))
        progress(i + 1, steps)
    return engine.summary(), series, t_hours


def ablation_row(name: str, scen: Scenario, summary: dict) -> dict:
    """An ablation row as ``run_ablation`` writes it: name, placement, features + summary."""
    features = scen.policy.features or Features()
    return {
        "name": name,
        "placement": scen.policy.name,
        "features": {k: getattr(features, k) for k in FEATURE_NAMES},
        **summary,
    }


def whatif_claim(*, run_id: int, task_id: str = "") -> bool:
    """Take the run for this execution; False when another has it or it is finished.

    One conditional UPDATE: a queued run is taken by whoever comes first; a running one only
    by a redelivery of the task that took it (the same task id: its worker died mid-run) or,
    once it has been running for longer than the task's hard time limit, by anyone (no
    execution can still be alive). A finished run is never run again, so a swept or
    duplicated task never repeats committed work.
    """
    now = timezone.now()
    takeable = Q(status=WhatIfRun.Status.QUEUED) | Q(
        status=WhatIfRun.Status.RUNNING,
        started_at__lte=now - timedelta(seconds=RUN_WHATIF_TIME_LIMIT),
    )
    if task_id:
        takeable |= Q(status=WhatIfRun.Status.RUNNING, claimed_by=task_id)
    return bool(
        WhatIfRun.objects.filter(takeable, pk=run_id).update(
            status=WhatIfRun.Status.RUNNING,
            progress=0.0,
            started_at=now,
            error="",
            claimed_by=task_id,
        )
    )


def whatif_execute(*, run_id: int, task_id: str = "") -> WhatIfRun:
    """Run both policies, writing progress (0..1) as it goes; failures are stored, not raised.

    Runs only if :func:`whatif_claim` takes the run (else returns it as it is). A redelivered
    task starts the run over: the result only appears once both policies have finished.
    """
    if not whatif_claim(run_id=run_id, task_id=task_id):
        return WhatIfRun.objects.get(pk=run_id)
    run = WhatIfRun.objects.get(pk=run_id)
    last_write = [0.0]

    def report(done: float) -> None:
        now = time.monotonic()
        if now - last_write[0] >= PROGRESS_EVERY_S:
            last_write[0] = now
            # Capped below 1: 1.0 means "result stored", written with the result.
            WhatIfRun.objects.filter(pk=run_id).update(progress=min(done, 0.99))

    try:
        scen = _build(run, run.seed)
        steps = ablation_scenarios(scen)
        seeds = list(range(run.seed, run.seed + max(run.seeds, 1)))
        total = len(steps) + 2 * (len(seeds) - 1)  # runs, for the progress bar
        ablation, runs = [], []
        for k, (name, step_scen) in enumerate(steps):
            summary, step_series, t_hours = run_series(
                step_scen,
                run.hours,
                lambda i, n, k=k: report((k + i / n) / total),
            )
            ablation.append(ablation_row(name, step_scen, summary))
            runs.append((summary, step_series))
        # The first and last ablation rows are the split and unified policies.
        per_seed = {seeds[0]: {"split": runs[0][0], "unified": runs[-1][0]}}
        series = {"split": runs[0][1], "unified": runs[-1][1]}
        done = len(steps)
        for seed in seeds[1:]:
            other = ablation_scenarios(_build(run, seed))
            per_seed[seed] = {}
            for pol, (_name, pol_scen) in (("split", other[0]), ("unified", other[-1])):
                per_seed[seed][pol], _s, _t = run_series(
                    pol_scen, run.hours, lambda i, n, k=done: report((k + i / n) / total)
                )
                done += 1
        combined = combine(per_seed)
        summaries = {p: combined[p] for p in POLICIES}
    except Exception as exc:  # noqa: BLE001 - any engine error is the run's outcome
        WhatIfRun.objects.filter(pk=run_id).update(
            status=WhatIfRun.Status.FAILED, error=str(exc)[:2000], finished_at=timezone.now()
        )
        return WhatIfRun.objects.get(pk=run_id)
    result = {
        # Means over the seeds; ``spread`` holds mean/min/max/95% CI per policy and for the
        # paired unified - split difference (engine.spread), ``seeds`` the seeds run.
        "summary": summaries,
        "spread": combined["spread"],
        # The one headline gain (engine.headline: goodput and busy utilization, paired by
        # seed, with allocated utilization beside it) that `compare` prints too.
        "headline": combined.get("headline"),
        "seeds": seeds,
        "ablation": ablation,
        "series": {"t_hours": t_hours, **series},
        "scenario": {
            "cards": run.cards,
            "hardware": scen.topology.hardware,
            "hours": run.hours,
            "seed": run.seed,
            "seeds": seeds,
            "training_jobs": len(scen.training_jobs),
            "services": len(scen.services),
            "trace": run.trace_name,
            "serve_model": run.serve_model,
        },
    }
    WhatIfRun.objects.filter(pk=run_id).update(
        status=WhatIfRun.Status.DONE, progress=1.0, result=result, finished_at=timezone.now()
    )
    return WhatIfRun.objects.get(pk=run_id)


# A queued run whose task has not started within this long was probably never sent (the
# broker was down at commit); the sweep sends it again, and again at most this often, so a
# long queue behind busy workers is not flooded with copies.
QUEUED_GRACE_SECONDS = 120
REDISPATCH_EVERY_SECONDS = 600


def whatif_runs_to_redispatch(*, now=None, limit: int = 100) -> list[int]:
    """Runs whose task was lost: queued past the grace (and not re-sent lately), or running
    since before the task's hard time limit (its worker died and no redelivery came)."""
    now = now or timezone.now()
    queued = Q(
        status=WhatIfRun.Status.QUEUED,
        created_at__lte=now - timedelta(seconds=QUEUED_GRACE_SECONDS),
    ) & (
        Q(redispatched_at__isnull=True)
        | Q(redispatched_at__lte=now - timedelta(seconds=REDISPATCH_EVERY_SECONDS))
    )
    dead = Q(
        status=WhatIfRun.Status.RUNNING,
        started_at__lte=now - timedelta(seconds=RUN_WHATIF_TIME_LIMIT + 60),
    ) & (
        Q(redispatched_at__isnull=True)
        | Q(redispatched_at__lte=now - timedelta(seconds=REDISPATCH_EVERY_SECONDS))
    )
    return list(
        WhatIfRun.objects.filter(queued | dead)
        .order_by("created_at")
        .values_list("pk", flat=True)[:limit]
    )


def whatif_redispatch_mark(*, run_id: int) -> None:
    """Note that the sweep sends the run's task again now (it waits before the next time)."""
    WhatIfRun.objects.filter(pk=run_id).update(redispatched_at=timezone.now())
