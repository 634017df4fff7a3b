"""Per-phase inference latency from FLOPs, bytes and the fabric, with one serving stack's
efficiencies and fixed costs (a profile, :mod:`.profiles`; fitted and checked by ``validate``).

Replica layout: ``tp`` cards per tensor-parallel group; ``ep`` cards hold the routed experts of
an MoE model (attention and dense layers run data-parallel in ``ep / tp`` groups). A replica
spans ``max(tp, ep)`` cards. ``dtype`` is the weight precision (bf16, fp8, int8): it sets the
bytes read per weight and the matmul rate (:func:`.fabric.peak_for`); the KV cache is 16-bit
unless a decode call says ``kv_dtype``.

**Prefill** of ``batch`` prompts of ``tokens`` tokens (T = batch x tokens in one pass)::

    linear   = max(2 N_active T / (cards peak eta(T)),  weight bytes / (card BW eta_bw))
    attention= batch x 2 L tokens^2 (heads x head_dim) / (tp peak eta_attn)     # causal
    comm     = 2 L x allreduce(T x hidden x 2 B) + exposed MoE all-to-all
    overhead = c_pass + L c_layer + batch c_seq                                  # fixed costs

**Decode** step of ``batch`` sequences with mean context ``ctx`` (continuous batching)::

    linear   = max(weights read / (BW eta_bw), 2 N_active batch / (peak eta(batch)))
    kv       = max(batch ctx kv_bytes / (BW eta_bw), attention FLOPs / (peak eta_attn))
    comm     = 2 L x allreduce(batch x hidden x 2 B) + exposed MoE all-to-all
    overhead = c_pass + L c_layer + batch c_seq

* GEMM efficiency grows with the tokens in the GEMM, ``eta(T) = eta_max T / (T + T_half)``,
  and never falls again: a large pass approaches ``eta_max`` of peak (the roofline).
* Ring all-reduce over ``tp`` cards: ``2(tp-1) alpha + 2(tp-1)/tp x bytes / link BW`` with the
  bus bandwidth and per-hop latency of the hardware's scale-up fabric (:mod:`.fabric`:
  measured NCCL all-reduce for A100/H100, datasheet-derived elsewhere), not fitted here.
* MoE: a decode step reads only the experts its tokens touch, ``E(1-(1-k/E)^b)`` of ``E`` per
  layer; each MoE layer dispatches and combines every token's ``k`` expert activations
  all-to-all over ``ep`` cards, on the scale-up fabric inside its domain and RDMA beyond.
  With the profile's ``moe_overlap`` (two micro-batches) ``a2a - eff x min(a2a, compute)``
  shows (the profile's ``moe_overlap_eff``); all-to-all at ``A2A_EFFICIENCY`` of the links.
* MLA decodes with absorbed up-projections: attention over the latent,
  ``2 heads (2 kv_lora_rank + rope)`` FLOPs per query and context token.
Per-layer fixed cost is ``layer_launch_s + layer_fixed_bytes / HBM BW`` (launches plus small
memory-bound kernels, which is why A100 pays more per layer than H100).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..catalog import HardwareSpec, ModelSpec
from .fabric import DTYPE_BYTES, fabric, peak_for
from .profiles import PROFILES, ServingParams, params_for, profile_name_for

__all__ = ["PARAMS", "PROFILES", "ServingParams", "params_for", "profile_name_for"]


@dataclass(frozen=True)
class CalibrationPoint:
    """DESIGN.md's public point (Llama-2-70B fp16, 8xH100, batch 1). Checked, not fitted."""

    model: str
    hardware: str
    tp: int
    batch: int
    prompt_tokens: int
    prefill_s: float
    decode_s_per_token: float


CALIBRATION = CalibrationPoint("llama-2-70b", "h100-sxm", 8, 1, 2048, 0.137, 0.030)


# The default stack's constants for NVIDIA parts (kept under this name for callers that read
# them); every function below takes ``p`` (explicit constants) or ``profile`` (a name).
PARAMS = PROFILES["trtllm-2025"].params


def _attr(m, name, default=0.0):
    v = getattr(m, name, default)
    return np.asarray(v, dtype=float)


def shape_of(m) -> dict[str, np.ndarray]:
    """Quantities the formulas need, from a ModelSpec or a namespace of per-service arrays."""
    params = _attr(m, "params")
    active = _attr(m, "active_params")
    active = np.where(active > 0, active, params)
    hidden = _attr(m, "hidden")
    moe_layers = _attr(m, "moe_layers")
    experts = _attr(m, "n_experts")
    k = _attr(m, "experts_per_token")
    expert_params = 3.0 * hidden * _attr(m, "moe_intermediate")
    routed = moe_layers * experts * expert_params
    routed_active = moe_layers * k * expert_params
    kv = getattr(m, "kv_bytes_per_token", None)
    rank = _attr(m, "kv_lora_rank")
    mla = rank > 0
    # Decode attention per query token and context token: 4 x heads x head_dim FLOPs (QK^T
    # and PV); MLA decodes with the up-projections absorbed, so each head attends over the
    # latent (rank + rope for QK, rank for PV): 2 x heads x (2 rank + rope) FLOPs.
    width = _attr(m, "attention_width")
    heads = _attr(m, "heads")
    mla_width = heads * (2.0 * rank + _attr(m, "qk_rope_head_dim")) / 2.0
    return {
        "params": params,
        "active": active,
        "layers": _attr(m, "layers"),
        "hidden": hidden,
        "attn_width": width,
        "attn_width_decode": np.where(mla, mla_width, width),
        "mla": mla,
        "kv_bytes": np.asarray(kv, dtype=float),
        "kv_split": np.where(mla, 1.0, np.maximum(_attr(m, "kv_heads", 1.0), 1.0)),
        "moe_layers": moe_layers,
        "experts": experts,
        "k": k,
        "routed": routed,
        "routed_active": routed_active,
        "mtp": _attr(m, "mtp_layers"),
    }


def _eff(p: ServingParams, tokens):
    """GEMM fraction of peak: rises with the tokens in the GEMM to ``gemm_eff_max`` (never
    falls again: a larger GEMM only amortises the weight read better)."""
    t = np.maximum(np.asarray(tokens, dtype=float), 1e-9)
    return p.gemm_eff_max * t / (t + p.gemm_half_tokens)


def allreduce_seconds(nbytes, tp, link_bw, hop_s):
    """Ring all-reduce of ``nbytes`` over ``tp`` cards (0 when tp = 1); ``link_bw`` = bus BW."""
    tp = np.asarray(tp, dtype=float)
    steps = 2.0 * (tp - 1.0)
    return np.where(tp > 1, steps * hop_s + steps / np.maximum(tp, 1.0) * nbytes / link_bw, 0.0)


def alltoall_seconds(nbytes_per_card, ep, fab, hop_s, supernode=None, *, phase=None):
    """All-to-all moving ``nbytes_per_card`` out of each of ``ep`` cards (0 when ep = 1).

    Peers inside the scale-up domain (``fab.scaleup_domain``: 8-GPU NVLink node, 384-NPU
    CloudMatrix supernode) are reached over the scale-up fabric, the rest over RDMA. With
    ``phase`` ("dispatch" / "combine") and a fabric that has that phase's measured bandwidth
    (``Fabric.a2a_dispatch_bytes_per_s`` ...), the scale-up part runs at it."""
    supernode = fab.scaleup_domain if supernode is None else supernode
    ep = np.asarray(ep, dtype=float)
    remote = 1.0 - 1.0 / np.maximum(ep, 1.0)
    outside = np.clip(1.0 - supernode / np.maximum(ep, 1.0), 0.0, 1.0)
    measured = {
        "dispatch": fab.a2a_dispatch_bytes_per_s,
        "combine": fab.a2a_combine_bytes_per_s,
    }.get(phase or "", 0.0)
    inside = 1.0 / measured if measured else 1.0 / (fab.scaleup_bytes_per_s * A2A_EFFICIENCY)
    t = (
        nbytes_per_card
        * remote
        * ((1.0 - outside) * inside + outside / (fab.scaleout_bytes_per_s * A2A_EFFICIENCY))
    )
    return np.where(ep > 1, t + 2.0 * hop_s * np.log2(np.maximum(ep, 2.0)), 0.0)


def expert_alltoall_seconds(units, ep, fab, dispatch_bytes):
    """Dispatch (``dispatch_bytes`` per element) + combine (BF16) of ``units`` token x expert
    x hidden elements per card: one exchange at the link rate, or the two measured phases."""
    if fab.a2a_dispatch_bytes_per_s and fab.a2a_combine_bytes_per_s:
        hop = fab.a2a_hop_s or fab.allreduce_hop_s
        return alltoall_seconds(units * dispatch_bytes, ep, fab, hop, phase="dispatch") + (
            alltoall_seconds(units * 2.0, ep, fab, hop, phase="combine")
        )
    return alltoall_seconds(units * (dispatch_bytes + 2.0), ep, fab, fab.allreduce_hop_s)


# Share of the nominal link bandwidth an expert all-to-all achieves, both tiers. Calibrated on
# DeepEP's published H800 kernel table (github.com/deepseek-ai/DeepEP README, "Performance"):
# intranode dispatch/combine 153/158 GB/s of NVLink's 200 GB/s per direction (0.77-0.79);
# low-latency RDMA 39-46 GB/s at EP64-256 on 400 Gb/s CX7 (50 GB/s): with this factor the
# formula gives EP128 dispatch 205 us / combine 375 us for 128 tokens vs 192 / 369 us measured.
# The same 0.8 as the training model's COLLECTIVE_EFFICIENCY.
A2A_EFFICIENCY = 0.8
# MLA decode attention (absorbed, 2 heads (2 rank + rope) FLOPs per query and context token, the
# FLOP count of FlashMLA's own write-up) at most at FlashMLA's published rate: 660 TFLOPS on
# H800 SXM5 (github.com/deepseek-ai/FlashMLA README, 2025-04-22 update; the kernel is
# compute-bound once heads x query tokens >= 128) over the 989 TFLOPS BF16 peak.
MLA_DECODE_EFF = 660.0 / 989.0


def _layout(tp, ep):
    tp = np.maximum(np.asarray(tp, dtype=float), 1.0)
    ep = np.maximum(np.asarray(ep, dtype=float), 1.0)
    cards = np.maximum(tp, ep)
    groups = np.maximum(np.floor(cards / tp), 1.0)  # attention data-parallel groups
    return tp, ep, cards, groups


def prefill_breakdown(
    model,
    hw: HardwareSpec,
    tp,
    tokens,
    batch=1.0,
    *,
    ep=1,
    dtype="bf16",
    p=None,
    profile=None,
    overlap=None,
) -> dict[str, np.ndarray]:
    """Seconds of one prefill pass split into compute / memory / communication / overhead.

    ``p`` (explicit constants) or ``profile`` (a name from :data:`.profiles.PROFILES`, default
    the hardware's current stack) picks the stack; ``overlap`` overrides its MoE overlap.
    """
    p = p or params_for(hw.id, profile)
    overlap = p.moe_overlap if overlap is None else bool(overlap)
    s = shape_of(model)
    fab = fabric(hw)
    wb = DTYPE_BYTES[dtype]
    peak = peak_for(hw, dtype)
    bw = hw.hbm_bandwidth_bytes_per_s * p.hbm_eff
    tp, ep, cards, groups = _layout(tp, ep)
    tokens = np.asarray(tokens, dtype=float)
    batch = np.asarray(batch, dtype=float)
    layer = p.layer_launch_s + p.layer_fixed_bytes / bw

    def work(b):  # GEMMs / weight read + attention of ``b`` prompts: (compute, memory, total)
        total = tokens * b
        dense_active = s["active"] - s["routed_active"]
        per_group = total / groups
        dense_t = 2.0 * dense_active * per_group / (tp * peak * _eff(p, per_group))
        tok_expert = total * s["k"] / np.maximum(s["experts"], 1.0)
        moe_t = np.where(
            s["experts"] > 0,
            2.0 * s["routed_active"] * total / (ep * peak * _eff(p, tok_expert)),
            0.0,
        )
        read = ((s["params"] - s["routed"]) / tp + s["routed"] / ep) * wb / bw
        gemm = dense_t + moe_t
        attn = (
            (b / groups)
            * 2.0
            * s["layers"]
            * tokens**2
            * s["attn_width"]
            / (tp * hw.peak_flops * p.attn_eff)
        )
        return np.maximum(gemm - read, 0.0) + attn, read, np.maximum(gemm, read) + attn

    per_group = tokens * batch / groups
    allreduce = (
        2.0
        * s["layers"]
        * allreduce_seconds(
            per_group * s["hidden"] * 2.0, tp, fab.bus_bytes_per_s, fab.allreduce_hop_s
        )
    )
    a2a_units = per_group / tp * s["k"] * s["hidden"]
    a2a = s["moe_layers"] * expert_alltoall_seconds(a2a_units, ep, fab, wb)
    overhead = p.pass_overhead_s + s["layers"] * layer + batch * p.seq_overhead_s
    return _compose(work(batch), a2a, allreduce, overhead, overlap, p.moe_overlap_eff)


def decode_breakdown(
    model,
    hw: HardwareSpec,
    tp,
    batch,
    context,
    *,
    ep=1,
    dtype="bf16",
    p=None,
    profile=None,
    overlap=None,
    query_tokens=1.0,
    kv_dtype="bf16",
) -> dict[str, np.ndarray]:
    """Seconds of one decode step of ``batch`` sequences at mean ``context`` tokens.

    ``query_tokens`` > 1 is a speculative step (e.g. DeepSeek's MTP verifies 2 tokens per
    sequence): GEMMs, attention FLOPs and all-to-all carry that many tokens per sequence,
    the KV cache is read once. ``kv_dtype`` is the KV-cache precision (the engine keeps it
    16-bit; FP8 stacks quantise it). ``p`` / ``profile`` / ``overlap`` as in
    :func:`prefill_breakdown`.
    """
    p = p or params_for(hw.id, profile)
    overlap = p.moe_overlap if overlap is None else bool(overlap)
    s = shape_of(model)
    fab = fabric(hw)
    wb = DTYPE_BYTES[dtype]
    peak = peak_for(hw, dtype)
    bw = hw.hbm_bandwidth_bytes_per_s * p.hbm_eff
    tp, ep, cards, groups = _layout(tp, ep)
    batch = np.maximum(np.asarray(batch, dtype=float), 1.0)
    context = np.asarray(context, dtype=float)
    q = np.asarray(query_tokens, dtype=float)
    layer = p.layer_launch_s + p.layer_fixed_bytes / bw
    # MLA decode attention runs at most at the best published MLA kernel's rate.
    attn_eff = np.where(s["mla"], np.minimum(p.attn_eff, MLA_DECODE_EFF), p.attn_eff)

    def work(b):  # linear + attention of ``b`` sequences: (compute, memory, total) seconds
        per_group = b / groups
        tok = b * q  # tokens through the GEMMs this step
        e = np.maximum(s["experts"], 1.0)
        touched = np.where(s["experts"] > 0, 1.0 - (1.0 - s["k"] / e) ** tok, 0.0)
        read = ((s["params"] - s["routed"]) / tp + s["routed"] * touched / ep) * wb / bw
        dense_active = s["active"] - s["routed_active"]
        flops_t = 2.0 * dense_active * per_group * q / (
            tp * peak * _eff(p, per_group * q)
        ) + np.where(
            s["experts"] > 0,
            2.0 * s["routed_active"] * tok / (ep * peak * _eff(p, tok * s["k"] / e)),
            0.0,
        )
        kv_bytes = s["kv_bytes"] * DTYPE_BYTES[kv_dtype] / 2.0
        kv_read = per_group * context * kv_bytes / (np.minimum(tp, s["kv_split"]) * bw)
        attn_f = (
            per_group
            * q
            * 4.0
            * s["layers"]
            * context
            * s["attn_width_decode"]
            / (tp * hw.peak_flops * attn_eff)
        )
        compute = np.maximum(flops_t - read, 0.0) + np.where(attn_f > kv_read, attn_f, 0.0)
        memory = read + np.where(attn_f > kv_read, 0.0, kv_read)
        return compute, memory, np.maximum(read, flops_t) + np.maximum(kv_read, attn_f)

    per_group = batch / groups
    allreduce = (
        2.0
        * s["layers"]
        * allreduce_seconds(
            per_group * q * s["hidden"] * 2.0, tp, fab.bus_bytes_per_s, fab.allreduce_hop_s
        )
    )
    a2a_units = per_group * q / tp * s["k"] * s["hidden"]
    a2a = s["moe_layers"] * expert_alltoall_seconds(a2a_units, ep, fab, wb)
    overhead = p.pass_overhead_s + s["layers"] * layer + per_group * p.seq_overhead_s
    return _compose(work(batch), a2a, allreduce, overhead, overlap, p.moe_overlap_eff)


def _compose(whole, a2a, allreduce, overhead, overlap, eff) -> dict[str, np.ndarray]:
    """The step serialised, or with the expert all-to-all overlapped (``overlap``): two
    micro-batches, one's dispatch/combine in flight under the other's compute (DeepSeek's
    dual micro-batch overlap, SGLang's two-batch overlap). The overlap realises the profile's
    ``moe_overlap_eff`` of its ideal ``max(work, all-to-all)``:
    ``exposed = a2a - eff x min(a2a, work)``."""
    compute, memory, w = whole
    hidden = eff * np.minimum(a2a, w)
    exposed = np.where(overlap, a2a - hidden, a2a)
    return {
        "compute": compute,
        "memory": memory,
        "communication": allreduce + exposed,
        "overhead": overhead,
        "total": w + allreduce + exposed + overhead,
    }


def prefill_seconds(
    model, hw: HardwareSpec, tp, tokens, batch=1.0, *, ep=1, dtype="bf16", profile=None
):
    """Wall time of a prefill (vectorised over ``tokens``/``batch``/model arrays)."""
    return prefill_breakdown(model, hw, tp, tokens, batch, ep=ep, dtype=dtype, profile=profile)[
        "total"
    ]


def mtp_step(model, p: ServingParams, mtp: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(query tokens verified, tokens kept) per sequence and decode step.

    A model with MTP modules (``mtp_layers``) served by a stack that runs them
    (``p.mtp_acceptance`` > 0) verifies ``1 + mtp_layers`` tokens per step and keeps
    ``1 + acceptance x mtp_layers``; otherwise (or with ``mtp=False``) 1 and 1. The one rule
    ``perf``, ``validate`` and the engine's scheduler share."""
    n = shape_of(model)["mtp"]
    on = (n > 0) & (p.mtp_acceptance > 0) & (mtp is not False)
    return np.where(on, 1.0 + n, 1.0), np.where(on, 1.0 + p.mtp_acceptance * n, 1.0)


def decode_seconds_per_token(
    model, hw: HardwareSpec, tp, batch, context, *, ep=1, dtype="bf16", profile=None, mtp=None
):
    """Wall time per output token of a decode step of ``batch`` sequences at mean ``context``
    tokens: the step divided by the tokens it keeps (:func:`mtp_step`; 1 without MTP)."""
    p = params_for(hw.id, profile)
    q, kept = mtp_step(model, p, mtp)
    return _decode_total(model, hw, tp, batch, context, ep, dtype, p, q) / kept


def _decode_total(model, hw, tp, batch, context, ep, dtype, p, q):
    """Decode step seconds with ``q`` query tokens per sequence (``q`` may be per model)."""
    return decode_breakdown(model, hw, tp, batch, context, ep=ep, dtype=dtype, p=p, query_tokens=q)[
        "total"
    ]


def kv_replication(model, tp) -> np.ndarray:
    """Copies of each token's KV cache a tensor-parallel group of ``tp`` cards stores.

    Attention heads split over the group, but a KV head cannot: with more cards than KV heads
    (GQA: Qwen3-235B's 4 KV heads on TP8) each head is stored on ``tp / kv_heads`` cards, and
    MLA's one latent per layer on all ``tp`` (why MLA systems run attention data-parallel,
    tp = 1). So a replica holds ``free HBM / (KV bytes x replication)`` tokens; the read per
    card is unchanged (:func:`decode_breakdown` divides it by ``min(tp, kv_split)``). From the
    model's config, nothing fitted; the one rule ``perf``, ``validate`` and the scheduler
    share for KV room."""
    tp = np.maximum(np.asarray(tp, dtype=float), 1.0)
    return tp / np.minimum(tp, shape_of(model)["kv_split"])


def replica_cards(tp: int, ep: int = 1) -> int:
    """Cards one replica occupies."""
    return max(int(tp), int(ep))


def weights_fit(model: ModelSpec, hw: HardwareSpec, tp: int, ep: int, dtype: str) -> float:
    """Bytes of HBM per card left after the weights (negative: does not fit)."""
    wb = DTYPE_BYTES[dtype]
    per_card = (model.params - model.routed_expert_params) / tp + model.routed_expert_params / ep
    return hw.hbm_bytes - per_card * wb


def perf_point(*args, **kwargs) -> dict:
    """The ``perf`` CLI figures (:func:`.operating.perf_point`; kept here for callers)."""
    from .operating import perf_point as point

    return point(*args, **kwargs)
