"""Time-faithful inference trace replay for ``compare --inference-trace`` (issue 13).

The trace drives one service (``trace-<file>``; model ``--trace-model``, default Llama-2-70B)
request by request: arrivals are binned per step **at their own timestamps** (after the
explicit ``--start`` offset and ``--rate-scale``), and each step uses the mean prompt and
output lengths of *its own* requests. Nothing is normalised or stretched to fill the cluster:
after the trace ends demand is zero unless ``--loop`` is given. Capacity follows demand: the
service autoscales (replicas sized for its current rate at the policy's target occupancy).
Burstiness inside a step comes from the trace: the squared CV of inter-arrival times within
steps (rate changes between steps are replayed, not folded into the CV).

Mooncake traces (``mooncake:FILE``) replay the same way and additionally feed the prefix
cache: the share of 512-token blocks whose ``hash_id`` was seen before becomes the service's
prefix-sharing ratio (the reuse the trace itself contains).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np

from .catalog import get_hardware, get_model
from .scenario.defaults import SLO_DEFAULTS, _tp_for_tpot
from .scenario.types import InferenceService, Scenario
from .serving.requests import fit_context
from .traces import InferenceTrace, read_azure, read_mooncake


def load_trace(kind: str, path: Path) -> tuple[InferenceTrace, float | None]:
    """(trace, prefix reuse share or None) for ``azure`` or ``mooncake`` files."""
    if kind == "azure":
        return read_azure(path), None
    reqs = read_mooncake(path)
    if not reqs:
        raise ValueError(f"{path}: trace has no requests")
    t = np.array([r.timestamp_ms for r in reqs], dtype=float) / 1e3
    order = np.argsort(t, kind="stable")
    seen: set[int] = set()
    blocks = reused = 0
    for i in order:
        for h in reqs[i].hash_ids:
            blocks += 1
            reused += h in seen
            seen.add(h)
    tr = InferenceTrace(
        t[order] - t.min(),
        np.array([reqs[i].input_length for i in order], dtype=float),
        np.array([reqs[i].output_length for i in order], dtype=float),
        hash_ids=[list(reqs[i].hash_ids) for i in order],
    )
    return tr, (reused / blocks if blocks else 0.0)


def trace_summary(tr: InferenceTrace) -> dict[str, float]:
    """Requests, mean rate, inter-arrival CV, median/P99 input and output tokens."""
    n = int(tr.t.size)
    span = float(tr.t.max() - tr.t.min()) if n > 1 else 0.0
    q = lambda a, p: float(np.quantile(a, p)) if a.size else 0.0  # noqa: E731
    return {
        "requests": n,
        "duration_s": span,
        "mean_rate_rps": (n - 1) / span if span > 0 else 0.0,
        "interarrival_cv": tr.interarrival_cv(),
        "input_tokens_p50": q(tr.prompt_tokens, 0.5),
        "input_tokens_p99": q(tr.prompt_tokens, 0.99),
        "output_tokens_p50": q(tr.output_tokens, 0.5),
        "output_tokens_p99": q(tr.output_tokens, 0.99),
    }


def window(
    tr: InferenceTrace, start_s: float, horizon_s: float, rate_scale: float, loop: bool
) -> InferenceTrace:
    """Requests arriving in ``[start, start + horizon / ...)`` of trace time, on the sim clock.

    ``rate_scale`` compresses time (x2 = twice the request rate, same requests); ``loop``
    repeats the trace (from its start) when the window runs past its end.
    """
    if not rate_scale > 0:
        raise ValueError(f"rate_scale: must be > 0 (got {rate_scale!r})")
    if start_s < 0:
        raise ValueError(f"start: must be >= 0 (got {start_s!r})")
    period = float(tr.t.max()) + 1e-6 if tr.t.size else 0.0
    if start_s >= period and not loop:
        raise ValueError(f"start: offset {start_s:.0f} s is past the trace end ({period:.0f} s)")
    span = horizon_s * rate_scale  # trace seconds covered by the horizon
    ts, ps, os_, src, passes = [], [], [], [], []
    rows = np.arange(tr.t.size)
    k = 0
    while True:
        off = k * period - start_s  # trace time t plays at (t + off) / rate_scale
        sel = (tr.t + off >= 0.0) & (tr.t + off < span)
        ts.append((tr.t[sel] + off) / rate_scale)
        ps.append(tr.prompt_tokens[sel])
        os_.append(tr.output_tokens[sel])
        src.append(rows[sel])
        passes.append(np.full(int(sel.sum()), k))
        k += 1
        if not loop or period <= 0 or k * period - start_s >= span:
            break
    t = np.concatenate(ts)
    hash_ids, src_a = tr.hash_ids, np.concatenate(src)
    if hash_ids is not None and k > 1:
        hash_ids, src_a = _relabel_passes(hash_ids, src_a, np.concatenate(passes))
    return InferenceTrace(t, np.concatenate(ps), np.concatenate(os_), hash_ids=hash_ids, src=src_a)


def _relabel_passes(hash_ids: list, src: np.ndarray, passes: np.ndarray) -> tuple[list, np.ndarray]:
    """Block ids of a looped replay, each pass after the first offset to ids of its own.

    A loop replays the trace's sessions again as new sessions: without the offset the second
    pass found its own first pass cached, and a higher rate scale (more passes in the same
    horizon) read as a higher hit ratio and a *lower* tail (issue 35 item 3). Each pass now
    starts as cold as the trace itself starts. Returns the per-row lists and rows 0..n-1.
    """
    stride = max((max(ids) for ids in hash_ids if ids), default=0) + 1
    out = [
        list(hash_ids[r]) if p == 0 else [h + p * stride for h in hash_ids[r]]
        for r, p in zip(src.tolist(), passes.tolist(), strict=True)
    ]
    return out, np.arange(len(out))


def per_step(tr: InferenceTrace, step_s: float, n_steps: int) -> dict[str, np.ndarray]:
    """Rate (1/s), mean prompt/output tokens and within-step inter-arrival ca2 per step."""
    idx = np.minimum((tr.t // step_s).astype(np.int64), n_steps - 1) if tr.t.size else tr.t
    idx = idx.astype(np.int64)
    count = np.bincount(idx, minlength=n_steps)[:n_steps].astype(float)
    psum = np.bincount(idx, weights=tr.prompt_tokens, minlength=n_steps)[:n_steps]
    osum = np.bincount(idx, weights=tr.output_tokens, minlength=n_steps)[:n_steps]
    with np.errstate(invalid="ignore", divide="ignore"):
        prompt = np.where(count > 0, psum / count, np.nan)
        output = np.where(count > 0, osum / count, np.nan)
    # Within-step burstiness: pooled squared CV of gaps between consecutive arrivals of a step.
    order = np.argsort(tr.t, kind="stable")
    t, s = tr.t[order], idx[order]
    gaps = np.diff(t)
    same = s[1:] == s[:-1]
    g = gaps[same]
    if g.size >= 2 and g.mean() > 0:
        # Normalise each gap by its step's mean gap so rate changes do not count as burstiness.
        step_mean = np.bincount(s[1:][same], weights=g, minlength=n_steps)
        step_n = np.bincount(s[1:][same], minlength=n_steps)
        mean_g = (step_mean / np.maximum(step_n, 1))[s[1:][same]]
        r = g / np.maximum(mean_g, 1e-12)
        ca2 = float(r.var() / max(r.mean() ** 2, 1e-12))
    else:
        ca2 = 1.0
    return {"rate": count / step_s, "prompt": prompt, "output": output, "ca2": ca2}


DEFAULT_TRACE_MODEL = "llama-2-70b"


def default_trace_model(prompt: np.ndarray, output: np.ndarray) -> str:
    """The model a replay serves when none is asked for: :data:`DEFAULT_TRACE_MODEL` when
    every request fits its window, else the catalog model with the smallest window that fits
    them all (fewest active parameters on a tie). A long-context trace (Mooncake: prompts
    past 100k tokens) so gets a long-context model instead of a 4k one that cuts 68% of
    its prompts. ``ValueError`` when no catalog model's window holds the longest request."""
    from .catalog import MODELS

    need = float((prompt + output).max()) if prompt.size else 0.0
    if get_model(DEFAULT_TRACE_MODEL).max_context >= need:
        return DEFAULT_TRACE_MODEL
    fits = [m for m in MODELS.values() if m.max_context >= need]
    if not fits:
        raise ValueError(
            f"trace: its longest request ({need:,.0f} tokens) exceeds every catalog model's "
            "context window; add a model whose window fits or ask for truncation"
        )
    return min(fits, key=lambda m: (m.max_context, m.active, m.id)).id


def replay_layout(m, hw, tpot_ms: float, context: float) -> tuple[int, int]:
    """(tp, ep) of a replica serving ``m``: the default scenario's TP rule for attention
    (capped at a node of 8 cards for an MoE model; 1 for MLA) and, for an MoE model, the smallest
    power-of-two expert-parallel width whose weights leave a third of each card's HBM for the
    KV cache. Checked with :func:`..perf.inference.perf_point`, the ``perf`` command's own
    check, so a replay never runs a layout ``perf`` refuses (``ValueError`` otherwise)."""
    from .perf.inference import perf_point, weights_fit

    tp = _tp_for_tpot(m, hw, tpot_ms, context)
    ep = 1
    if m.n_experts:
        # MLA attention runs data-parallel (tp 1), as DeepSeek, SGLang and CloudMatrix-Infer
        # serve it: under tp > 1 its one latent per layer is stored on every card
        # (perf.inference.kv_replication), so TP would only divide the KV room.
        tp = 1 if m.kv_lora_rank else min(tp, 8)
        ep = tp
        while weights_fit(m, hw, tp, ep, "bf16") < hw.hbm_bytes / 3 and ep < 1024:
            ep *= 2
    perf_point(m.id, hw.id, tp, 1, max(int(context), 1), ep=ep)  # raises if perf refuses
    return tp, ep


def apply_replay(
    scen: Scenario,
    kind: str,
    path: Path,
    *,
    horizon_s: float,
    rate_scale: float = 1.0,
    start_s: float = 0.0,
    loop: bool = False,
    model: str | None = None,
    truncate: bool = False,
    replicas: int | None = None,
) -> tuple[Scenario, dict]:
    """Scenario whose inference demand is the replayed trace; returns it with the summary.

    ``model`` None picks :func:`default_trace_model` for the replayed window. Requests longer
    than the model's context window are refused (``ValueError`` saying how many, and what to
    do) unless ``truncate``: then they are cut as a client truncating history does and
    counted (``prompts_truncated``). ``replicas`` pins the service's capacity (its
    ``min_replicas`` and ``max_replicas``) instead of autoscaling it."""
    if replicas is not None and (not isinstance(replicas, int) or replicas < 1):
        raise ValueError(f"replicas: must be an int >= 1 (got {replicas!r})")
    full, reuse = load_trace(kind, path)
    if full.t.size == 0:
        raise ValueError(f"{path}: trace has no requests")
    tr = window(full, start_s, horizon_s, rate_scale, loop)
    if model is None:
        model = default_trace_model(tr.prompt_tokens, tr.output_tokens)
    m = get_model(model)
    pr, out_t, truncated = fit_context(tr.prompt_tokens, tr.output_tokens, m.max_context)
    if truncated and not truncate:
        raise ValueError(
            f"{path}: {truncated:,} of {tr.t.size:,} replayed requests "
            f"({truncated / max(tr.t.size, 1):.1%}) are longer than {model}'s "
            f"{m.max_context:,}-token context window; serve a model whose window fits "
            f"(--trace-model, or leave it out to pick one) or ask for truncation "
            f"(--truncate-prompts)"
        )
    summ = trace_summary(tr) if tr.t.size else trace_summary(full)
    summ["prompts_truncated"] = truncated
    summ["max_context"] = m.max_context
    summ["model"] = model
    tr = dataclasses.replace(tr, prompt_tokens=pr, output_tokens=out_t)
    summ.update(
        {
            "source": f"{kind}:{path}",
            "rate_scale": rate_scale,
            "start_s": start_s,
            "loop": loop,
            "trace_requests_total": int(full.t.size),
        }
    )
    if tr.t.size == 0:
        raise ValueError(f"{path}: no requests in the replay window (start {start_s} s)")
    n_steps = max(int(math.ceil(horizon_s / scen.step_seconds - 1e-9)), 1)
    ps = per_step(tr, scen.step_seconds, n_steps)
    rate = ps["rate"]
    mean_rate = float(rate.mean())
    prompt_mean = float(np.nanmean(ps["prompt"]))
    output_mean = float(np.nanmean(ps["output"]))
    prompt = np.where(np.isnan(ps["prompt"]), prompt_mean, ps["prompt"])
    output = np.where(np.isnan(ps["output"]), output_mean, ps["output"])
    hw = get_hardware(scen.topology.hardware)
    ttft_ms, tpot_ms = SLO_DEFAULTS["chat"]
    tp, ep = replay_layout(m, hw, tpot_ms, prompt_mean + output_mean / 2)
    summ["tp"], summ["ep"] = tp, ep
    svc = InferenceService(
        name=f"trace-{Path(path).stem}"[:60],
        tenant=scen.services[0].tenant if scen.services else "trace",
        model=model,
        tp=tp,
        ep=ep,
        mean_rate_rps=max(mean_rate, 1e-9),
        criticality="core",
        slo_ttft_ms=ttft_ms,
        slo_tpot_ms=tpot_ms,
        prompt_tokens_mean=max(prompt_mean, 1.0),
        output_tokens_mean=max(output_mean, 1.0),
        prefix_share=float(reuse) if reuse is not None else 0.0,
        max_batch=64,
        min_replicas=replicas or 0,
        max_replicas=replicas or 0,
        peak_to_trough=1.0,
        arrival_cv=math.sqrt(max(ps["ca2"], 0.01)),
    )
    summ["within_step_ca2"] = ps["ca2"]
    if reuse is not None:
        summ["prefix_block_reuse"] = reuse
    curve = (rate / mean_rate).tolist() if mean_rate > 0 else rate.tolist()
    out = dataclasses.replace(
        scen,
        services=[svc],
        demand_curve=curve,
        demand_curve_step_s=scen.step_seconds,
        replay={
            "prompt_tokens": np.maximum(prompt, 1.0).tolist(),
            "output_tokens": np.maximum(output, 1.0).tolist(),
            "requests": _rows(tr),
            "prompts_truncated": truncated,
        },
    )
    return out, summ


def _rows(tr: InferenceTrace) -> dict:
    """The replayed requests (sorted by arrival) for the request-level sample."""
    order = np.argsort(tr.t, kind="stable")
    rows = {
        "t": tr.t[order].tolist(),
        "prompt": np.maximum(tr.prompt_tokens[order], 1.0).tolist(),
        "output": np.maximum(tr.output_tokens[order], 1.0).tolist(),
    }
    if tr.hash_ids is not None and tr.src is not None:
        rows["hash_ids"] = [tr.hash_ids[int(i)] for i in tr.src[order]]
    return rows
