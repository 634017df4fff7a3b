"""Training step-time model: MFU is an *output* of compute, layout, fabric and pipeline.

One synchronous step of a dense (or MoE) transformer trained with Megatron-style 3D/4D
parallelism (TP x CP x PP x DP, EP inside DP for MoE), 1F1B pipeline schedule with optional
interleaving (``vpp`` virtual stages), distributed optimizer (gradients reduce-scattered and
parameters all-gathered across DP once per step).

Per micro-batch and pipeline stage (``L/pp`` layers) the time is

* **compute**: GEMMs ``3 x 2 x T x N_layer / tp`` FLOPs at a device efficiency that depends on
  the GEMM size per card (hidden/tp) and the tokens per micro-batch (small GEMMs run far below
  peak), attention ``3 x 2 x T x s x d_attn / tp`` (causal half of the PaLM count) at a lower
  efficiency, and memory-bound element-wise work (norms, activations, residuals) at HBM speed;
  activation recomputation re-runs the forward (``full``) or the attention core (``selective``);
* **TP collectives**: 4 all-reduce equivalents per layer (sequence parallel all-gather +
  reduce-scatter, forward and backward; +2 with full recompute) of ``T x h x 2`` bytes over the
  tier the TP group spans; ``tp_overlap`` of it hidden behind GEMMs (MegaScale-style fusion);
* **CP / EP collectives**: K/V exchange of ring attention, MoE all-to-all (dispatch + combine,
  forward and backward) over the tier their group spans;
* **PP**: point-to-point activations between stages; the **bubble** of 1F1B is
  ``(pp-1)/vpp`` micro-batch times, i.e. a share ``(p-1)/(v m + p-1)`` of the step;
* **DP**: gradients (``grad_bytes`` per parameter, FP32 by default as Megatron and Llama 3 do)
  reduce-scattered and bf16 parameters all-gathered; with ``dp_overlap`` this hides behind the
  last micro-batch's backward / the first forward, the rest is exposed.

Collectives are **hierarchical**: a group of ``g`` ranks spread over nodes, racks and
supernodes moves ``(k-1)/k`` of the (remaining) data through each tier with fan-out ``k``, at
the tier's per-card bandwidth: scale-up (NVLink / HCCS / UB) inside a node, the NIC inside a
rack (``in_rack`` convergence), across racks (``inter_rack``:1) and across supernodes
(``inter_sn``:1). So the communication share grows when a job spans racks or supernodes.

Synchronous steps wait for the slowest of ``dp x pp`` ranks: with per-rank step-time jitter
``jitter`` (coefficient of variation) the expected maximum adds ``jitter x sqrt(2 ln n)``.

Constants that are assumptions (not fitted to any MFU figure): per-hardware best GEMM
efficiency ``GEMM_EFFICIENCY`` (vendor GEMM benchmarks: A100 ~ 0.85-0.9 of 312 TFLOPS, H100 SXM
~ 0.7-0.8 of 989 TFLOPS under power capping), the GEMM-size and token saturation scales,
attention at 0.8 of GEMM efficiency (FlashAttention-2), collective bus efficiency 0.8, 1 %
rank jitter. The engine README's "Validation" section compares the outputs with published runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..catalog import HardwareSpec, ModelSpec
from .fabric import peak_for

# Best sustained dense BF16 GEMM efficiency per device (fraction of datasheet peak).
GEMM_EFFICIENCY = {
    "a100-sxm": 0.86,
    "h100-sxm": 0.76,
    "h800-sxm": 0.76,  # same die as H100
}
GEMM_EFFICIENCY_DEFAULT = 0.72  # Ascend parts: no public GEMM benchmark (assumption)
# The one constant fitted to MFU figures: the share of the best GEMM rate a training stack
# sustains inside a real model step (kernel mix, launch gaps, fp16/bf16 casts). Fitted on the
# calibration set only (Megatron-LM 2021 Table 1: 175B/530B/1T on 1.5-3k A100), never on the
# held-out 10k+ GPU runs; applied to every device.
STACK_FACTOR = 0.92
# Per-card scale-up bandwidth (one direction) inside a node: NVLink3 300 GB/s (A100),
# NVLink4 450 GB/s (H100), HCCS 196 GB/s (910B), UB 392 GB/s (910C, CloudMatrix384 paper),
# 950 roadmap 2 TB/s bidirectional -> 1 TB/s.
SCALE_UP_BW = {
    "a100-sxm": 300e9,
    "h100-sxm": 450e9,
    "h800-sxm": 200e9,  # export part: NVLink 400 GB/s bidirectional
    "ascend-910b": 196e9,
    "ascend-910c": 392e9,
    "ascend-950pr": 1000e9,
    "ascend-950dt": 1000e9,
}
GEMM_WIDTH_SCALE = 192.0  # per-card GEMM width (hidden/tp) at which efficiency halves (x/(x+x0))
GEMM_TOKEN_SCALE = 96.0  # tokens per micro-batch at which efficiency halves
ATTENTION_RATIO = 0.8  # attention kernels relative to GEMM efficiency
ELEMENTWISE_PASSES = 16.0  # activation-sized HBM reads+writes per layer, forward
HBM_EFFICIENCY = 0.8
COLLECTIVE_EFFICIENCY = 0.8
COLLECTIVE_LATENCY_S = 15e-6  # per ring hop
JITTER = 0.01
# Share of the compute/all-to-all overlap that an overlapped MoE schedule (DeepSeek's DualPipe,
# Megatron-Core's 1F1B all-to-all overlap) realises: exposed = a2a - eff x min(a2a, compute).
# 1.0 would be the ideal max(compute, a2a). Calibrated (``validate --refit``) on one published
# run that is not a held-out check: Megatron-Bridge performance-summary, NeMo 25.09, DGX-H100,
# DeepSeekV3 (dropless, force-balanced experts) on 1,024 H100 (TP2 PP8 VP4 EP64, GBS 8192, seq
# 4096, FP8) 1,297 tokens/s/GPU. It also absorbs what the step model leaves out of
# an MoE step (FP8 quantisation and token permutation kernels, schedule gaps), so it is an
# effective, not a measured, share.
EP_OVERLAP_EFFICIENCY = 0.2656


@dataclass(frozen=True)
class Fabric:
    """Tiers a collective can cross, with per-card bandwidth and convergence ratios."""

    cards_per_node: int = 8
    cards_per_rack: int = 24
    cards_per_supernode: int = 384
    scale_up_bw: float = 392e9
    nic_bw: float = 50e9
    in_rack: float = 1.0
    inter_rack: float = 2.0
    inter_sn: float = 4.0
    scale_up_spans_supernode: bool = False  # CloudMatrix-style: the UB reaches every card

    @classmethod
    def from_topology(cls, topo, hardware_id: str) -> Fabric:
        """The fabric of a scenario :class:`Topology` (duck-typed: no import cycle)."""
        return cls(
            cards_per_node=topo.cards_per_node,
            cards_per_rack=topo.cards_per_node * topo.nodes_per_rack,
            cards_per_supernode=topo.cards_per_supernode,
            scale_up_bw=SCALE_UP_BW.get(hardware_id, 200e9),
            nic_bw=topo.link_bandwidth_bytes_per_s,
            in_rack=topo.in_rack_convergence,
            inter_rack=topo.inter_rack_convergence,
            inter_sn=topo.inter_supernode_convergence,
        )


@dataclass(frozen=True)
class Shape:
    """What the step model needs of a model (from the catalog or synthesised from N)."""

    params: float
    active_params: float
    layers: int
    hidden: int
    attention_width: int
    kv_width: int
    top_k: int = 1
    vocab: int = 50_000


# Vocabulary sizes of the catalog models (published tokenizer configs); others assume 50k.
VOCAB = {
    "llama-3-405b": 128_256,
    "llama-3-70b": 128_256,
    "llama-3-8b": 128_256,
    "llama-2-70b": 32_000,
    "gpt-3-175b": 50_257,
    "bloom-176b": 250_880,
}


def shape_of(model: ModelSpec | None, params: float) -> Shape:
    """Shape of a catalog model, or a standard dense shape for ``params`` (L = h/128)."""
    if model is not None:
        active = float(getattr(model, "active_params", None) or model.params)
        return Shape(
            float(model.params),
            active,
            model.layers,
            model.hidden,
            model.attention_width,
            model.kv_heads * model.head_dim,
            int(getattr(model, "top_k", None) or getattr(model, "experts_per_token", None) or 1),
            VOCAB.get(model.id, 50_000),
        )
    h = max(128 * round((128.0 * params / 12.0) ** (1 / 3) / 128.0), 256)
    layers = max(int(round(params / (12.0 * h * h))), 2)
    return Shape(float(params), float(params), layers, int(h), int(h), int(h))


def _tier_fanouts(
    group: int, stride: int, fab: Fabric, spread: tuple | None = None
) -> list[tuple[int, float]]:
    """(fan-out, per-card bandwidth) per tier for ``group`` ranks ``stride`` cards apart.

    Ranks are laid out contiguously with the given stride inside a job that starts at a
    tier boundary (the allocator packs jobs); fan-outs multiply to ``group``.
    """
    if group <= 1:
        return []
    span = group * stride

    def units(size: int, placed: int = 0) -> int:  # distinct tier units the group touches
        compact = math.ceil(span / size)
        if spread is not None and placed:
            # A scattered job: the group touches its share of the job's actual spread.
            compact = max(compact, round(placed * span / max(spread[2], 1)))
        return max(1, min(group, compact))

    sns = units(fab.cards_per_supernode, spread[1] if spread else 0)
    racks = max(units(fab.cards_per_rack, spread[0] if spread else 0), sns)
    nodes = max(units(fab.cards_per_node), racks)
    if fab.scale_up_spans_supernode:
        # One scale-up domain per supernode: node and rack tiers run at scale-up bandwidth.
        return [
            (max(group // sns, 1), fab.scale_up_bw),
            (sns, fab.nic_bw / fab.inter_sn),
        ]
    return [
        (max(group // nodes, 1), fab.scale_up_bw),
        (max(nodes // racks, 1), fab.nic_bw / fab.in_rack),
        (max(racks // sns, 1), fab.nic_bw / fab.inter_rack),
        (sns, fab.nic_bw / fab.inter_sn),
    ]


def collective_seconds(
    kind: str,
    nbytes: float,
    group: int,
    stride: int,
    fab: Fabric,
    penalty: float = 1.0,
    spread: tuple | None = None,
    scaleout_share: float = 1.0,
) -> float:
    """Hierarchical ring collective time for ``nbytes`` per rank.

    ``kind`` is ``allreduce`` (= reduce-scatter + all-gather), ``reducescatter``,
    ``allgather`` or ``alltoall``. ``penalty`` slows the scale-out tiers (failed uplinks).
    ``scaleout_share`` scales what an all-to-all sends beyond the scale-up tier (node-limited
    MoE routing with forwarding over the scale-up fabric sends less across nodes).
    """
    if group <= 1 or nbytes <= 0:
        return 0.0
    passes = 2.0 if kind == "allreduce" else 1.0
    t, remaining, hops = 0.0, float(nbytes), 0
    for i, (k, bw) in enumerate(_tier_fanouts(group, stride, fab, spread)):
        if k <= 1:
            continue
        slow = penalty if i > 0 else 1.0
        if kind == "alltoall":
            # Each rank sends (k-1)/k of its data across this tier; no reduction between tiers.
            share = scaleout_share if i > 0 else 1.0
            t += nbytes * share * (k - 1) / k / (bw * COLLECTIVE_EFFICIENCY) * slow
        else:
            t += passes * remaining * (k - 1) / k / (bw * COLLECTIVE_EFFICIENCY) * slow
            remaining /= k
        hops += k - 1
    return t + passes * hops * COLLECTIVE_LATENCY_S


def _efficiency(hw: HardwareSpec, width: float, tokens: float) -> float:
    e = GEMM_EFFICIENCY.get(hw.id, GEMM_EFFICIENCY_DEFAULT) * STACK_FACTOR
    return e * width / (width + GEMM_WIDTH_SCALE) * tokens / (tokens + GEMM_TOKEN_SCALE)


def interleaved_vpp(layers: int, pp: int) -> int:
    """Interleaving as published large runs use it: virtual chunks of about two layers."""
    if pp <= 1:
        return 1
    return max(1, min(8, (layers // pp) // 2))


def step_time(
    shape: Shape,
    hw: HardwareSpec,
    cards: int,
    tp: int,
    pp: int,
    *,
    ep: int = 1,
    cp: int = 1,
    seq_len: int = 4096,
    global_batch_tokens: float = 4 * 2**20,
    micro_batch: int = 1,
    vpp: int | None = None,
    recompute: str = "selective",
    parallel_block: bool = False,
    balance_stages: bool = False,
    tp_overlap: float = 0.0,
    dp_overlap: bool = True,
    grad_bytes: float = 4.0,
    fabric: Fabric | None = None,
    link_penalty: float = 1.0,
    jitter: float = JITTER,
    spread: tuple | None = None,
    gemm_dtype: str = "bf16",
    ep_overlap: bool = False,
    ep_dispatch_bytes: float = 2.0,
    ep_node_limit: int = 0,
    overlap_compute_share: float = 1.0,
) -> dict[str, float]:
    """One training step; returns MFU, throughput and the time split (see module doc).

    ``gemm_dtype="fp8"`` runs the GEMMs at the part's FP8 rate (DeepSeek-V3's FP8 training;
    attention and MFU stay on the BF16 peak). ``ep_overlap`` hides the MoE all-to-all behind
    the compute of the other micro-batch chunk (DeepSeek's DualPipe; exposed =
    ``max(0, all-to-all - compute)`` per micro-batch). ``ep_dispatch_bytes`` is the element
    size of the dispatch (1: FP8 dispatch; the combine stays BF16); ``ep_node_limit`` M > 0
    routes each token to at most M nodes, sending it once per node and forwarding over the
    scale-up fabric (DeepSeek-V3's node-limited routing), so only ``min(k, M)/k`` crosses nodes.
    ``overlap_compute_share`` is the share of the device left to compute while the overlapped
    all-to-all runs (DeepSeek-V3 dedicates 20 of the H800's 132 SMs to it: 112/132)."""
    fab = fabric or Fabric(scale_up_bw=SCALE_UP_BW.get(hw.id, 200e9))
    for name, v in (("tp", tp), ("pp", pp), ("ep", ep), ("cp", cp), ("micro_batch", micro_batch)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name}: must be an int >= 1 (got {v!r})")
    if recompute not in ("none", "selective", "full"):
        raise ValueError(f"recompute: must be none, selective or full (got {recompute!r})")
    mp = tp * pp * cp
    if cards % mp:
        raise ValueError(f"cards: {cards} is not a multiple of tp*pp*cp = {mp}")
    dp = cards // mp
    if ep > 1 and dp % ep:
        raise ValueError(f"ep: {ep} must divide the data-parallel degree {dp}")
    if pp > shape.layers:
        raise ValueError(f"pp: {pp} stages for {shape.layers} layers")
    seqs = global_batch_tokens / seq_len
    per_replica = seqs / dp
    if per_replica < micro_batch:
        raise ValueError(
            f"global_batch_tokens: {global_batch_tokens:.3g} tokens give {per_replica:.2f} "
            f"sequences per data-parallel replica, fewer than micro_batch={micro_batch}"
        )
    m = max(int(per_replica // micro_batch), 1)
    v = 1 if vpp is None else (interleaved_vpp(shape.layers, pp) if vpp == 0 else int(vpp))
    L, h, s = shape.layers, shape.hidden, seq_len
    T = micro_batch * s / cp  # tokens per micro-batch per rank
    lps = L / pp
    embed = 2.0 * shape.vocab * h  # untied input embedding + output projection
    n_layer = max(shape.active_params - embed, 0.5 * shape.active_params) / L
    e_g = _efficiency(hw, h / tp, T)
    e_a = e_g * ATTENTION_RATIO
    bw = hw.hbm_bandwidth_bytes_per_s * HBM_EFFICIENCY
    gemm_peak = peak_for(hw, gemm_dtype)
    gemm_f = 2.0 * T * n_layer / tp / (gemm_peak * e_g)  # forward, one layer
    attn_f = 2.0 * T * s * shape.attention_width / tp / (hw.peak_flops * e_a)  # causal half
    elem_f = ELEMENTWISE_PASSES * T * h * 2.0 / tp / bw
    fwd = gemm_f + attn_f + elem_f
    extra = {"none": 0.0, "selective": attn_f, "full": fwd}[recompute]
    compute = lps * (3.0 * fwd + extra)
    # The last stage also runs the output projection (logits); the pipeline runs at the pace
    # of its slowest stage unless layers are rebalanced (fewer on the first/last stage).
    logits = 3.0 * 2.0 * T * shape.vocab * h / tp / (gemm_peak * e_g)
    compute += logits / pp if (balance_stages or pp == 1) else logits
    # TP collectives (sequence parallel): 4 all-reduce equivalents per layer (+2 with full
    # recompute); a parallel attention+MLP block (PaLM, MegaScale) shares one pair of them.
    n_tp = (2 if parallel_block else 4) + (2 if recompute == "full" else 0)
    t_tp = (
        lps * n_tp * collective_seconds("allreduce", T * h * 2.0, tp, 1, fab, link_penalty, spread)
    )
    t_tp_exposed = t_tp * (1.0 - tp_overlap)
    # Context parallel: all-gather K/V forward, reduce-scatter dK/dV backward, half hidden.
    kv_bytes = T * shape.kv_width * 2 * 2.0 / tp
    t_cp = (
        lps
        * 0.5
        * (
            collective_seconds("allgather", kv_bytes * cp, cp, tp, fab, link_penalty, spread)
            + collective_seconds("reducescatter", kv_bytes * cp, cp, tp, fab, link_penalty, spread)
        )
    )
    # MoE all-to-all: dispatch + combine, forward and backward, over the EP group.
    t_ep = 0.0
    if ep > 1:
        a2a = T * h * shape.top_k / tp  # elements each rank sends per direction
        share = min(shape.top_k, ep_node_limit) / shape.top_k if ep_node_limit > 0 else 1.0
        t_ep = (
            lps
            * 2  # forward and backward, each a dispatch and a combine
            * sum(
                collective_seconds(
                    "alltoall", a2a * b, ep, mp, fab, link_penalty, spread, scaleout_share=share
                )
                for b in (ep_dispatch_bytes, 2.0)
            )
        )
        if ep_overlap:
            compute = compute / overlap_compute_share  # SMs given to communication
            t_ep = t_ep - EP_OVERLAP_EFFICIENCY * min(t_ep, compute)
    # Pipeline point-to-point: activations forward, gradients backward (x v with interleaving).
    t_p2p = 0.0
    if pp > 1:
        t_p2p = 2.0 * v * T * h * 2.0 / tp / (fab.nic_bw * COLLECTIVE_EFFICIENCY) * link_penalty
    t_mb = compute + t_tp_exposed + t_cp + t_ep + t_p2p
    bubble = (pp - 1) / v * t_mb
    # DP: gradient reduce-scatter + parameter all-gather of this rank's shard.
    dense_shard = (shape.params if ep == 1 else shape.active_params) / (tp * pp)
    expert_shard = 0.0 if ep == 1 else (shape.params - shape.active_params) / (tp * pp * ep)
    t_dp = collective_seconds(
        "reducescatter", grad_bytes * dense_shard, dp, mp, fab, link_penalty, spread
    ) + collective_seconds("allgather", 2.0 * dense_shard, dp, mp, fab, link_penalty, spread)
    if expert_shard:
        dpe = dp // ep
        t_dp += collective_seconds(
            "reducescatter", grad_bytes * expert_shard, dpe, mp * ep, fab, link_penalty, spread
        ) + collective_seconds(
            "allgather", 2.0 * expert_shard, dpe, mp * ep, fab, link_penalty, spread
        )
    window = t_mb if dp_overlap else 0.0
    t_dp_exposed = max(t_dp - window, 0.0)
    # Optimizer: read/write fp32 master + Adam moments of this rank's shard (memory-bound).
    t_opt = 16.0 * 2 * (dense_shard + expert_shard) / max(dp, 1) / bw
    busy = m * t_mb + bubble
    straggle = busy * jitter * math.sqrt(2.0 * math.log(max(dp * pp, 1))) if dp * pp > 1 else 0.0
    total = busy + t_dp_exposed + t_opt + straggle
    tokens = m * micro_batch * s * dp
    model_flops_per_token = 6.0 * shape.active_params + 12.0 * L * shape.attention_width * s
    mfu = tokens * model_flops_per_token / (cards * hw.peak_flops * total)
    comm = m * (t_tp_exposed + t_cp + t_ep + t_p2p) + t_dp_exposed
    # Memory per card: bf16 weights + fp32 grads + fp32 master/Adam sharded over DP, plus
    # activations of the micro-batches in flight on the first stage.
    shard = dense_shard + expert_shard
    state = shard * (2.0 + grad_bytes) + 12.0 * shard / max(dp, 1)
    act_per_layer = {"none": 34.0 + 5.0 * shape.attention_width / 128 * s / h, "selective": 34.0}
    act = (
        T * h * act_per_layer.get(recompute, 2.0 * tp) / tp * lps * min(pp, m) * (1 + (v > 1) * 0.5)
    )
    return {
        "mfu": mfu,
        "tokens_per_s": tokens / total,
        "samples_per_s": tokens / total / s,
        "step_s": total,
        "comm_share": comm / total,
        "bubble_share": bubble / total,
        "straggler_share": straggle / total,
        "tp_s": m * t_tp_exposed,
        "dp_exposed_s": t_dp_exposed,
        "dp": dp,
        "microbatches": m,
        "vpp": v,
        "gemm_efficiency": e_g,
        "memory_gib_per_card": (state + act) / 2**30,
        "fits_in_hbm": bool(state + act <= 0.95 * hw.hbm_bytes),
        "model_tflops_per_card": mfu * hw.peak_flops / 1e12,
    }


def auto_layout(shape: Shape, hw: HardwareSpec, cards: int, cards_per_node: int) -> tuple:
    """(tp, pp) a scheduler would pick: smallest model parallelism whose state fits HBM.

    TP stays inside a node (powers of two up to the node width); PP grows after TP is full.
    The usable card count is rounded down to a multiple of tp x pp (the rest idles).
    """
    budget = 0.6 * hw.hbm_bytes  # leave room for activations
    tp, pp = 1, 1
    while (2.0 + 4.0) * shape.params / (tp * pp) + 12.0 * shape.params / cards > budget:
        if tp * 2 <= min(cards_per_node, cards) and shape.hidden // (tp * 2) >= 128:
            tp *= 2
        elif pp * 2 <= min(shape.layers, cards // tp):
            pp *= 2
        else:
            break
    return tp, pp
