"""The twin's model of a moved workload on both accelerators (``rollout.analysis.scaling``).

Registered with rollout when the app starts (rollout cannot import this app). For a question
about workload ``W`` moved from cluster S to cluster T, the factor is

    model(W as the twin runs it on T, T's accelerator) / model(W as it runs on S, S's accelerator)

— the twin's own job and service specs on each side (the twin's clusters are separate
scenarios, and a job of the same name may differ in size between them; the factor covers
that too, and the note names both sides):

- ``training_samples_per_second``: the training step model (``perf.train_model.step_time``
  through the job table the twin ticks with), on the cards the job held in the window
  (``workload_allocated_cards``; its minimum when the twin reported none), compactly placed;
- ``serving_ttft_seconds`` / ``serving_tpot_seconds`` (and the older per-request
  ``inference_ttft_p99_seconds``): the unloaded prefill pass (its first token) and the decode
  step per token of one replica (``perf.inference.perf_point`` at batch 1 for TTFT and at the
  service's half batch for TPOT). Queueing is **not** in the factor — labelled an
  approximation in the note; a loaded service's tail is judged by its SLO and the live
  baseline rather than by this factor alone.

Anything else — a cluster without a twin run, a workload the scenario lacks, a layout that does
not fit the target's memory, another metric — is not modelled: ``None``, and the gate says so.
"""

from __future__ import annotations

import dataclasses
import math

from rollout.analysis.scaling import Scaling, ScalingQuestion
from simulation.engine.catalog import get_hardware
from simulation.engine.perf.inference import perf_point
from simulation.engine.scenario.types import Scenario
from simulation.engine.sched.training import JobTable
from simulation.models import TwinRun
from telemetry.read import MeasurementError, window_aggregate

TRAINING_METRICS = {"training_samples_per_second"}
TTFT_METRICS = {"serving_ttft_seconds", "inference_ttft_p99_seconds"}
TPOT_METRICS = {"serving_tpot_seconds", "inference_tpot_p99_seconds"}


def _scenario(cluster_id: int) -> Scenario | None:
    data = TwinRun.objects.filter(cluster_id=cluster_id).values_list("scenario", flat=True).first()
    if data is None:
        return None
    try:
        return Scenario.from_dict(data)
    except ValueError:
        return None


def _cards(cluster_id: int, workload: str, window, fallback: int) -> int:
    """Cards the job held in the window (rounded mean), else its minimum."""
    if window is None:
        return fallback
    try:
        found = window_aggregate(
            metric="workload_allocated_cards",
            cluster_id=cluster_id,
            entity_kind="workload",
            entity_key=workload,
            aggregation="mean",
            start=window[0],
            end=window[1],
        )
    except MeasurementError:
        return fallback
    if found.value is None or found.value < 1:
        return fallback
    return max(int(round(found.value)), 1)


def _training_rate(scenario: Scenario, name: str, hardware: str, cards: int) -> float | None:
    job = next((j for j in scenario.training_jobs if j.name == name), None)
    if job is None:
        return None
    hw = get_hardware(hardware)
    topo = dataclasses.replace(scenario.topology, hardware=hardware)
    try:
        table = JobTable([job], topo, hw.hbm_bytes, hw)
    except ValueError:
        return None  # the job's state does not fit this accelerator's memory
    cards = max(cards, job.min_cards)
    rack = topo.cards_per_node * topo.nodes_per_rack
    racks = max(math.ceil(cards / rack), 1)
    sns = max(math.ceil(racks / topo.racks_per_supernode), 1)
    rate = table.perf(0, cards, racks, sns)[0]
    return rate if rate > 0 else None


def _training(q: ScalingQuestion) -> Scaling | None:
    source, target = _scenario(q.source_cluster_id), _scenario(q.target_cluster_id)
    if source is None or target is None or not q.workload:
        return None
    job = next((j for j in source.training_jobs if j.name == q.workload), None)
    there = next((j for j in target.training_jobs if j.name == q.target_workload), None)
    if job is None or there is None:
        return None
    src_cards = _cards(q.source_cluster_id, q.workload, q.source_window, job.min_cards)
    tgt_cards = _cards(q.target_cluster_id, q.target_workload, q.target_window, there.min_cards)
    before = _training_rate(source, q.workload, q.source_hardware, src_cards)
    after = _training_rate(target, q.target_workload, q.target_hardware, tgt_cards)
    if before is None or after is None:
        return None
    note = (
        f"twin training model: {job.params / 1e9:.3g}B on {src_cards} × {q.source_name} "
        f"{before:.4g}/s → {there.params / 1e9:.3g}B on {tgt_cards} × {q.target_name} "
        f"{after:.4g}/s"
    )
    return Scaling(after / before, note[:300], q.source_name, q.target_name)


def _latency(q: ScalingQuestion, key: str) -> Scaling | None:
    source, target = _scenario(q.source_cluster_id), _scenario(q.target_cluster_id)
    if source is None or target is None or not q.workload:
        return None
    here = next((s for s in source.services if s.name == q.workload), None)
    there = next((s for s in target.services if s.name == q.target_workload), None)
    if here is None or there is None:
        return None
    figures = []
    for service, hardware in ((here, q.source_hardware), (there, q.target_hardware)):
        batch = 1 if key == "ttft_ms" else max(service.max_batch // 2, 1)
        try:
            point = perf_point(
                service.model,
                hardware,
                service.tp,
                batch,
                int(service.prompt_tokens_mean),
                ep=service.ep,
                dtype=service.weight_dtype,
                output_tokens=int(service.output_tokens_mean),
            )
        except (ValueError, KeyError):
            return None
        figures.append(float(point[key]))
    if not all(f > 0 for f in figures):
        return None
    what = "TTFT, unloaded (batch 1)" if key == "ttft_ms" else "TPOT at half batch"
    note = (
        f"twin serving model, {what}, no queueing (approximation): {here.model} tp{here.tp} "
        f"{figures[0]:.4g} ms on {q.source_name} → {there.model} tp{there.tp} "
        f"{figures[1]:.4g} ms on {q.target_name}"
    )
    return Scaling(figures[1] / figures[0], note[:300], q.source_name, q.target_name)


def twin_scaling(q: ScalingQuestion) -> Scaling | None:
    """The provider rollout asks (``rollout.analysis.scaling.scaling_provider_register``)."""
    if q.source_hardware is None or q.target_hardware is None:
        return None
    try:
        get_hardware(q.source_hardware), get_hardware(q.target_hardware)
    except ValueError:
        return None  # an accelerator the twin's catalogue does not hold
    if q.metric in TRAINING_METRICS and q.workload_kind == "training":
        return _training(q)
    if q.metric in TTFT_METRICS and q.workload_kind == "inference":
        return _latency(q, "ttft_ms")
    if q.metric in TPOT_METRICS and q.workload_kind == "inference":
        return _latency(q, "tpot_ms")
    return None
