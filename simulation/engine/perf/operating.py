"""Operating points of one replica layout: what ``perf`` prints and ``validate`` checks.

One code path for the ``perf`` command, the ``validate`` checks and the engine's scheduler:
every decode figure here goes through :func:`.inference.decode_seconds_per_token`'s rule
(:func:`.inference.mtp_step`: a model with MTP modules on a stack that runs MTP verifies
``1 + mtp_layers`` tokens per step and keeps ``1 + acceptance x mtp_layers``), so
``perf --tpot-target-ms`` and ``validate``'s MoE checks give the same number for the same
layout, and the scheduler sizes replicas with the same per-token time.

* :func:`decode_at_tpot` — the largest batch per attention group (tp cards; a replica of
  ``max(tp, ep)`` cards has ``max(tp, ep) / tp`` groups) whose per-token time meets the bound
  and whose KV cache fits, and its output tokens/s per card.
* :func:`best_prefill_per_card` — prompt tokens/s per card at the best prefill batch.
* :func:`perf_point` — the whole ``perf`` report.
"""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from ..catalog import get_hardware, get_model
from .fabric import DTYPE_BYTES
from .inference import (
    decode_breakdown,
    kv_replication,
    mtp_step,
    prefill_breakdown,
    prefill_seconds,
    replica_cards,
    weights_fit,
)
from .profiles import PROFILES, params_for, profile_name_for

KV_FRACTION = 0.9  # share of the HBM left after weights given to the KV cache
MAX_BATCH_PER_GROUP = 2048  # trtllm-bench's largest max_batch_size in the published recipes


def _groups(tp: int, ep: int) -> int:
    return max(int(max(tp, ep) // tp), 1)


def kv_room_per_group(m, hw, tp: int, ep: int, dtype: str, ctx: float) -> int:
    """Sequences of ``ctx`` tokens one attention group's KV cache holds (16-bit cache; each
    token's KV stored :func:`.inference.kv_replication` times across the group)."""
    free = weights_fit(m, hw, tp, ep, dtype) * replica_cards(tp, ep) * KV_FRACTION
    per_seq = ctx * m.kv_bytes_per_token * float(kv_replication(m, tp))
    return int(free / _groups(tp, ep) // max(per_seq, 1.0))


def decode_at_tpot(
    model_id,
    hw,
    ep,
    dtype,
    ctx,
    tpot_s,
    *,
    tp: int = 1,
    mtp: bool | None = None,
    profile=None,
    max_per_group: int = MAX_BATCH_PER_GROUP,
) -> dict:
    """Largest batch per attention group meeting ``tpot_s`` per output token (within KV room)
    and its output tokens/s per card; ``batch_per_card`` is that batch over the cards of one
    group (tp = 1: per card). ``mtp=False`` switches MTP off (a stack that ran without it)."""
    m = get_model(model_id) if isinstance(model_id, str) else model_id
    p = params_for(hw.id, profile)
    groups, cards = _groups(tp, ep), replica_cards(tp, ep)
    q, kept = (float(x) for x in mtp_step(m, p, mtp))
    room = kv_room_per_group(m, hw, tp, ep, dtype, ctx)
    per_group = np.arange(1, max(min(max_per_group, room), 1) + 1, dtype=float)
    step = decode_breakdown(
        m, hw, tp, per_group * groups, ctx, ep=ep, dtype=dtype, p=p, query_tokens=q
    )["total"]
    tpot = step / kept
    ok = per_group[tpot <= tpot_s]
    b = float(ok.max()) if ok.size else 0.0
    i = max(int(b) - 1, 0)
    return {
        "batch_per_group": b,
        "batch_per_card": b * groups / cards,
        "replica_batch": int(b * groups),
        "tpot_ms": float(tpot[i]) * 1e3,
        "step_ms": float(step[i]) * 1e3,
        "tokens_per_step": kept,
        "tokens_per_s": b * groups / tpot[i] / cards if b else 0.0,
    }


def best_prefill_per_card(model_id, hw, ep, dtype, prompt, *, tp: int = 1, profile=None) -> float:
    """Prompt tokens/s per card at the best prefill batch (1..64 prompts per group)."""
    m = get_model(model_id) if isinstance(model_id, str) else model_id
    groups, cards = _groups(tp, ep), replica_cards(tp, ep)
    per_group = np.arange(1, 65, dtype=float)
    t = prefill_seconds(m, hw, tp, prompt, per_group * groups, ep=ep, dtype=dtype, profile=profile)
    return float(np.max(per_group * groups * prompt / t)) / cards


def perf_point(
    model_id: str,
    hardware_id: str,
    tp: int,
    batch: int,
    prompt_tokens: int,
    *,
    ep: int = 1,
    dtype: str = "bf16",
    output_tokens: int = 256,
    tpot_target_ms: float | None = None,
    profile: str | None = None,
    context_tokens: float | None = None,
) -> dict:
    """The ``perf`` CLI figures for one replica layout under ``profile`` (default: current).

    Decode figures are per output token (an MTP step's time over the tokens it keeps); the
    step itself is ``decode_step_ms``. Decode runs at the mean KV context of a request,
    ``prompt_tokens + output_tokens / 2``, unless ``context_tokens`` says it (``validate``'s
    published decode points are quoted at a KV length: 4K for CloudMatrix384)."""
    m, hw = get_model(model_id), get_hardware(hardware_id)
    name = profile_name_for(hardware_id, profile)  # ValueError names the valid profiles
    prof = PROFILES[name].params
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"dtype: must be one of bf16, fp8, int8 (got {dtype!r})")
    if ep > 1 and ep % tp:
        raise ValueError(f"ep: must be a multiple of tp ({tp}) (got {ep})")
    if ep > 1 and m.n_experts == 0:
        raise ValueError(f"ep: {model_id} is a dense model; expert parallelism needs an MoE model")
    free = weights_fit(m, hw, tp, ep, dtype)
    if free <= 0:
        raise ValueError(
            f"tp: {model_id} weights ({dtype}) do not fit on tp={tp} ep={ep} x {hardware_id}"
        )
    cards = replica_cards(tp, ep)
    if context_tokens is not None and not context_tokens > 0:
        raise ValueError(f"context_tokens: must be > 0 (got {context_tokens!r})")
    ctx = float(context_tokens) if context_tokens else prompt_tokens + output_tokens / 2.0
    q, kept = (float(x) for x in mtp_step(m, prof))
    pre = prefill_breakdown(m, hw, tp, prompt_tokens, batch, ep=ep, dtype=dtype, p=prof)
    dec = decode_breakdown(m, hw, tp, batch, ctx, ep=ep, dtype=dtype, p=prof, query_tokens=q)
    pre1 = prefill_breakdown(m, hw, tp, prompt_tokens, 1, ep=ep, dtype=dtype, p=prof)
    pre_s, step_s = float(pre["total"]), float(dec["total"])
    dec_s = step_s / kept
    out = {
        "model": model_id,
        "hardware": hardware_id,
        "tp": tp,
        "ep": ep,
        "dtype": dtype,
        "cards": cards,
        "batch": batch,
        "prompt_tokens": prompt_tokens,
        "output_tokens": output_tokens,
        "decode_context_tokens": ctx,
        "prefill_ms": pre_s * 1e3,
        "decode_ms_per_token": dec_s * 1e3,
        "decode_step_ms": step_s * 1e3,
        "mtp_tokens_per_step": kept,
        "decode_tokens_per_s": batch / dec_s,
        # One request alone: the prefill pass's last position yields the first token (NIM /
        # AIPerf's TTFT); under load the engine's queues add a decode step of the batch.
        "ttft_ms": float(pre1["total"]) * 1e3,
        "tpot_ms": dec_s * 1e3,
        "breakdown": {
            "prefill_ms": {k: float(v) * 1e3 for k, v in pre.items() if k != "total"},
            "decode_ms": {k: float(v) * 1e3 for k, v in dec.items() if k != "total"},
        },
        # Throughput mode: the best prefill batch (each attention group busy), per card.
        "prefill_tokens_per_s_per_card": best_prefill_per_card(
            m, hw, ep, dtype, prompt_tokens, tp=tp, profile=name
        ),
        "prefill_tokens_per_s_per_card_at_batch": prompt_tokens * batch / pre_s / cards,
        # KV room bounds the batch: sequences of ctx tokens in the HBM left after weights.
        "kv_capacity_sequences": kv_room_per_group(m, hw, tp, ep, dtype, ctx) * _groups(tp, ep),
        "profile": name,
        "calibration": asdict(prof),
    }
    if tpot_target_ms is not None:
        at = decode_at_tpot(m, hw, ep, dtype, ctx, tpot_target_ms / 1e3, tp=tp, profile=name)
        out["tpot_target_ms"] = tpot_target_ms
        out["decode_batch_at_target"] = at["replica_batch"]
        out["decode_batch_per_card_at_target"] = at["batch_per_card"]
        out["tpot_ms_at_target"] = at["tpot_ms"]
        out["decode_tokens_per_s_per_card"] = at["tokens_per_s"]
    else:
        out["decode_tokens_per_s_per_card"] = batch / dec_s / cards
    return out
