"""A credible default workload mix, scaled to the cluster size.

At 10,240 cards: 200 training jobs (gangs of 8..512 cards, ~60% elastic up to 2x, a backlog at
t=0 plus arrivals through the horizon) and 50 inference services (Llama-3-8B, Llama-2-70B,
BLOOM-176B, GPT-3 175B; chat-like ~2.5x and code-like ~8x diurnal peak/trough, code bursty with
arrival CV 2; ~40% core-business) over several tenants. Service request rates are *derived from
the performance model* so that, at the daily peak, replicas sized at the policy's target
occupancy fill ``inference_peak_fraction`` of the cluster: the only workload input is that
fraction, no throughput figure is typed in.
"""

from __future__ import annotations

import math
import random

import numpy as np

from ..catalog import HardwareSpec, get_hardware, get_model, min_tensor_parallel
from ..serving.requests import OUTPUT_SIGMA, PROMPT_SIGMA
from . import demand as trace_demand
from . import inference_demand as fleet
from .training_demand import draw_jobs
from .types import Faults, InferenceService, Policy, Scenario, Topology, TrainingJob

TENANTS = (
    "acme-bank",
    "zhiyuan-ai",
    "metro-gov",
    "starlight-media",
    "northwind-retail",
    "internal-research",
)
_SERVICE_MODELS = ("llama-3-8b", "llama-2-70b", "llama-2-70b", "bloom-176b", "gpt-3-175b")
# (min cards, probability, parameters) for training gangs.
_JOB_SIZES = (
    (8, 0.30, 7e9),
    (16, 0.20, 13e9),
    (32, 0.20, 13e9),
    (64, 0.15, 34e9),
    (128, 0.10, 70e9),
    (256, 0.04, 70e9),
    (512, 0.01, 175e9),
)


def size_services(
    services: list[InferenceService],
    hw: HardwareSpec,
    policy: Policy,
    budget_cards: np.ndarray,
    peak_multiplier: np.ndarray,
) -> None:
    """Set each service's mean rate from the perf model (in place).

    At the demand peak (``peak_multiplier`` x mean rate) the service needs about
    ``budget_cards`` cards at the policy's target occupancy. SLOs are *not* touched: they are
    operator targets (:data:`SLO_DEFAULTS`), never derived from the model's own output.
    """
    from ..sched.inference import ServiceTable  # local import: avoids a package cycle

    tbl = ServiceTable(services, hw, policy)
    peak_reps = np.maximum(np.floor(budget_cards / tbl.tp), 1)
    s0, s1 = tbl.times(np.zeros(tbl.n), tbl.batch * policy.target_utilization)
    peak_rate = peak_reps * tbl.batch * policy.target_utilization / (s0 + s1)
    mean_rate = peak_rate / np.asarray(peak_multiplier, dtype=float)
    for s, r in zip(services, mean_rate, strict=True):
        s.mean_rate_rps = float(r)


# Operator SLO targets by service class (ms): (TTFT, TPOT). Sources (README "SLO defaults"):
# chat follows MLPerf Inference's Llama-2-70B server scenario (TTFT <= 2 s; its TPOT bound is
# 200 ms, we use the tighter 100 ms reading-speed target common in serving practice); code
# completion is tighter (MLPerf's interactive scenario: TTFT 450 ms / TPOT 40 ms; DistServe,
# OSDI'24, sets code-completion TTFT far below chat): 1 s / 50 ms.
SLO_DEFAULTS = {"chat": (2000.0, 100.0), "code": (1000.0, 50.0)}

# Request lengths. The draws (512/1,024/2,048-token chat prompts, twice that for code) sit
# around the Azure LLM inference trace 2023 (Patel et al., "Splitwise", ISCA'24, section III:
# median prompt 1,020 tokens for conversation, 1,500 for coding). A model cannot take more
# than its context window (catalog ``max_context``: BLOOM and GPT-3 2,048 tokens, Llama 2
# 4,096, Llama 3 8,192, from their published configs), so a service's mean output is capped
# at an eighth of the window and its mean prompt where at most :data:`CONTEXT_OVERFLOW` of
# its requests (log-normal prompt and output, ``serving.requests.PROMPT_SIGMA`` /
# ``OUTPUT_SIGMA``) would overflow it: a 2k-context model serves short prompts, as operators of
# such models do, instead of truncating a large share of its requests.
CONTEXT_OVERFLOW = 0.005
_Z = np.linspace(-6.0, 6.0, 241)  # quadrature grid over the output's standard normal
_W = np.exp(-0.5 * _Z**2) / np.exp(-0.5 * _Z**2).sum()


def overflow_share(prompt_mean: float, output_mean: float, max_context: int) -> float:
    """Share of log-normal requests whose prompt + output exceeds ``max_context``."""
    if max_context <= 0:
        return 0.0
    out = output_mean * np.exp(OUTPUT_SIGMA * _Z - 0.5 * OUTPUT_SIGMA**2)
    room = max_context - out
    ok = room > 0
    z = np.log(np.where(ok, room, 1.0) / prompt_mean) / PROMPT_SIGMA + 0.5 * PROMPT_SIGMA
    tail = np.where(ok, 0.5 * np.vectorize(math.erfc)(z / math.sqrt(2.0)), 1.0)
    return float((_W * tail).sum())


def fit_lengths(prompt: float, output: float, max_context: int) -> tuple[float, float]:
    """(prompt, output) means capped so at most :data:`CONTEXT_OVERFLOW` of requests overflow
    the context window (bisection on the prompt mean; unchanged when they already fit)."""
    if max_context <= 0:
        return prompt, output
    output = min(output, max_context / 8.0)
    if overflow_share(prompt, output, max_context) <= CONTEXT_OVERFLOW:
        return prompt, output
    lo, hi = 1.0, prompt
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (
            (mid, hi) if overflow_share(mid, output, max_context) <= CONTEXT_OVERFLOW else (lo, mid)
        )
    return float(math.floor(lo)), output


def _tp_for_tpot(model, hw: HardwareSpec, tpot_ms: float, context: float) -> int:
    """Smallest TP (power of two, >= the memory minimum) whose batch-1 TPOT is < 60% of target.

    An operator picks the replica layout so the TPOT target leaves room for batching.
    """
    from ..perf.inference import decode_seconds_per_token

    tp = min_tensor_parallel(model, hw)
    while tp < 16 and float(decode_seconds_per_token(model, hw, tp, 1, context)) * 1e3 > (
        0.6 * tpot_ms
    ):
        tp *= 2
    return tp


# Offered training load, in units of the cards outside the inference peak share (the split
# training partition). Not fitted (no public trace states a cluster's offered load against a
# partition it never had): an assumption that puts the cluster in the regime the decision is
# about. At 1.6 the training demand is above the partition's capacity all day (x1.5) and
# about 0.9 of the whole cluster, so the idle inference reservations are what could absorb
# it. Its check is held out: the split queue's mean wait next to the public ~860 s
# (``validate``). At the former 0.8 the partition was rarely full and jobs waited 30-110 s.
DEFAULT_TRAINING_LOAD = 1.6


def default_scenario(
    cards: int = 10240,
    seed: int = 7,
    *,
    hardware: str = "ascend-910c",
    policy: str = "unified",
    hours: float = 24.0,
    n_training_jobs: int | None = None,
    n_services: int | None = None,
    inference_peak_fraction: float = 0.45,
    step_seconds: float = 60.0,
    faults: bool = True,
    night_window: tuple[float, float] | None = (22.0, 6.0),
    training_load: float = DEFAULT_TRAINING_LOAD,
    training_demand: str = "cluster-traces",
    inference_demand: str = "fleet",
    fleet_params=None,
) -> Scenario:
    """Build the default mix for ``cards`` cards; deterministic for a given ``seed``.

    Training demand is an arrival process (:mod:`.demand`) offering ``training_load`` x the
    cards outside the inference peak share (:data:`DEFAULT_TRAINING_LOAD`); ``night_window`` is the
    time-sharing window (used where the ``time_sharing`` feature is on).
    ``training_demand`` picks the arrival model: ``cluster-traces`` (:mod:`.demand`, fitted to
    public cluster traces: daily rhythm, sweeps, mostly single-card short jobs; the default)
    or ``legacy`` (:mod:`.training_demand`, Poisson arrivals of mostly multi-card hour-long
    jobs). ``inference_demand``: ``fleet`` (:mod:`.inference_demand`, fitted to public
    inference duty-cycle traces: capacity reserved for peaks, on/off services; the default)
    or ``legacy`` (every service's peak fills its budget at the target occupancy).
    """
    if training_demand not in ("cluster-traces", "legacy"):
        raise ValueError(
            f"training_demand: must be 'cluster-traces' or 'legacy' (got {training_demand!r})"
        )
    if inference_demand not in ("fleet", "legacy"):
        raise ValueError(
            f"inference_demand: must be 'fleet' or 'legacy' (got {inference_demand!r})"
        )
    if not isinstance(cards, int) or cards < 64:
        raise ValueError(f"cards: must be an int >= 64 (got {cards!r})")
    if not 0.0 < inference_peak_fraction < 1.0:
        raise ValueError(
            f"inference_peak_fraction: must be in (0, 1) (got {inference_peak_fraction!r})"
        )
    if not 0.0 < training_load <= 5.0:
        raise ValueError(f"training_load: must be in (0, 5] (got {training_load!r})")
    rnd = random.Random(seed)
    hw = get_hardware(hardware)
    scale = cards / 10240
    n_svc = n_services if n_services is not None else max(5, math.ceil(50 * scale))
    pol = Policy(name=policy, night_window=night_window)
    horizon = hours * 3600.0

    services = []
    for i in range(n_svc):
        model = get_model(_SERVICE_MODELS[i % len(_SERVICE_MODELS)])
        code = i % 3 == 2
        ttft_ms, tpot_ms = SLO_DEFAULTS["code" if code else "chat"]
        prompt = float(rnd.choice((512, 1024, 2048))) * (2 if code else 1)
        output = float(rnd.choice((128, 256, 512))) / (2 if code else 1)
        prompt, output = fit_lengths(prompt, output, model.max_context)
        services.append(
            InferenceService(
                name=f"{'code' if code else 'chat'}-{model.id}-{i:03d}",
                tenant=TENANTS[i % len(TENANTS)],
                model=model.id,
                tp=_tp_for_tpot(model, hw, tpot_ms, prompt + output / 2),
                mean_rate_rps=1.0,  # replaced below from the perf model
                criticality="core" if i % 5 in (0, 3) else "non-core",
                slo_ttft_ms=ttft_ms,
                slo_tpot_ms=tpot_ms,
                prompt_tokens_mean=prompt,
                output_tokens_mean=output,
                prefix_share=rnd.uniform(0.2, 0.6),
                max_batch=32,
                peak_to_trough=rnd.uniform(7.0, 9.0) if code else rnd.uniform(2.2, 2.8),
                peak_hour=rnd.uniform(10.0, 16.0),
                arrival_cv=2.0 if code else 1.0,
            )
        )
    # Request rates from the perf model: peak replicas fill the requested share of the cluster.
    weights = np.array([rnd.uniform(0.5, 1.5) for _ in services])
    budget = inference_peak_fraction * cards * weights / weights.sum()
    if inference_demand == "fleet":
        fleet.apply_fleet(services, hw, pol, budget, seed, fleet_params or fleet.PARAMS)
    else:
        amplitude = np.array([(s.peak_to_trough - 1) / (s.peak_to_trough + 1) for s in services])
        size_services(services, hw, pol, budget, 1.0 + amplitude)

    demand_kw = {
        "train_cards": cards * (1.0 - inference_peak_fraction),
        "horizon_s": horizon,
        "training_load": training_load,
        "max_gang": max(8, cards // 4),
    }
    drnd = random.Random(seed * 7919 + 1)
    if training_demand == "legacy" or n_training_jobs is not None:
        drawn = draw_jobs(drnd, n_jobs=n_training_jobs, **demand_kw)
    else:
        drawn = trace_demand.draw_jobs(drnd, **demand_kw)
    jobs = training_jobs_from_demand(drawn, Topology(cards=cards, hardware=hardware), rnd)
    return Scenario(
        topology=Topology(cards=cards, hardware=hardware),
        training_jobs=jobs,
        services=services,
        policy=pol,
        faults=Faults(enabled=faults),
        seed=seed,
        step_seconds=step_seconds,
    )


def training_jobs_from_demand(demand: list[dict], topo: Topology, rnd: random.Random) -> list:
    """TrainingJobs for drawn arrivals; work = duration x the model's rate at the asked size."""
    from ..sched.training import JobTable  # local import: avoids a package cycle

    hw = get_hardware(topo.hardware)
    jobs = []
    for i, d in enumerate(demand):
        size = int(d["cards"])
        params = min(d["params"], 0.5 * hw.hbm_bytes * size / 16.0)
        elastic = rnd.random() < 0.6
        jobs.append(
            TrainingJob(
                name=f"train-{i:04d}",
                tenant=TENANTS[(i * 7) % len(TENANTS)],
                params=float(params),
                min_cards=size,
                max_cards=size * 2 if elastic else size,
                work_samples=1.0,  # set below from the model
                seq_len=4096,
                global_batch=int(min(max(16 * size, 32), 2048)),
                priority=rnd.choice((0, 0, 1, 1, 2, 3)),
                checkpoint_interval_s=1800.0,
                submit_time_s=float(d["submit"]),
            )
        )
    if jobs:
        jt = JobTable(jobs, topo, hw.hbm_bytes, hw)
        cpr = topo.cards_per_node * topo.nodes_per_rack
        for j, (job, d) in enumerate(zip(jobs, demand, strict=True)):
            racks = math.ceil(job.min_cards / cpr)
            sns = math.ceil(job.min_cards / topo.cards_per_supernode)
            rate = jt.perf(j, job.min_cards, racks, sns)[0]
            job.work_samples = max(rate * d["duration"], 1.0)
    return jobs
