"""Serving-stack profiles: the global efficiencies and fixed costs of one serving stack.

The formulas of :mod:`.inference` are the same for every stack; what a stack changes is how
close it gets to the hardware (GEMM and attention efficiency, achievable HBM bandwidth) and
what it pays per forward pass, per layer and per sequence (scheduling, kernel launches,
sampling). Each profile below was fitted by ``python -m simulation.engine validate --refit``
(:mod:`..validate` / :mod:`..validate_current`) to the *calibration* rows of its own public
measurements; the other rows of the same sources are reported as held out.

* ``splitwise-2023`` — the Splitwise / vLLM-era stack (2023, A100/H100, fp16), fitted to the
  calibration half of the Splitwise profiling data (``calibration/splitwise.py``).
* ``trtllm-2025`` — TensorRT-LLM 1.0 (PyTorch backend, 2025) on H100 SXM with FP8 weights,
  fitted to part of NVIDIA's published max-throughput table (``calibration/current.py``).
* ``cloudmatrix-2025`` — CloudMatrix-Infer on Ascend 910C (CloudMatrix384, INT8, 2025): the
  ``trtllm-2025`` constants with the two that the paper's figures pin down (GEMM efficiency
  from its prefill throughput, attention efficiency from its decode throughput) refitted.

``current`` (the default) is the 2024+ stack for the hardware: ``cloudmatrix-2025`` on
Ascend parts, ``trtllm-2025`` elsewhere. No profile has a term that lowers efficiency as the
work grows: a large prefill or decode batch approaches the roofline (GEMM at
``gemm_eff_max`` of peak, reads at ``hbm_eff`` of bandwidth), it never collapses below it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from .train_model import EP_OVERLAP_EFFICIENCY


@dataclass(frozen=True)
class ServingParams:
    """Global efficiencies and overheads of one serving stack (same for every model)."""

    gemm_eff_max: float  # large-GEMM fraction of peak
    gemm_half_tokens: float  # tokens per GEMM at which efficiency is half of the max
    attn_eff: float  # attention-kernel fraction of peak
    hbm_eff: float  # achievable fraction of HBM bandwidth
    pass_overhead_s: float  # per forward pass (scheduling, launch, sampling setup)
    layer_launch_s: float  # per layer per pass: kernel launches / synchronisation
    layer_fixed_bytes: float  # per layer per pass: small-kernel traffic (norms, rotary...)
    seq_overhead_s: float  # per sequence per pass (sampling, KV/block bookkeeping)
    # MoE all-to-all overlapped with compute (two micro-batches, DeepSeek / SGLang TBO):
    # exposed = max(0, all-to-all - the other micro-batch's compute). False = serialised.
    moe_overlap: bool = False
    # Share of that ideal overlap the stack realises: exposed = a2a - eff x min(a2a, compute).
    moe_overlap_eff: float = 1.0


# The numeric constants a fit may move (the overlap is a property of the stack, set below).
_STACK_FIELDS = ("moe_overlap", "moe_overlap_eff")
FITTED = tuple(n for n in (f.name for f in fields(ServingParams)) if n not in _STACK_FIELDS)


@dataclass(frozen=True)
class Profile:
    """A named serving stack: its constants and where they come from."""

    name: str
    stack: str
    source: str
    params: ServingParams


# Fitted by ``validate --refit`` on Splitwise's calibration half without the former
# activation-saturation term (which let one large prefill fall to 0.17 % of peak).
SPLITWISE_2023 = ServingParams(
    gemm_eff_max=0.5566,
    gemm_half_tokens=0.2823,
    attn_eff=0.1869,
    hbm_eff=0.92,
    pass_overhead_s=1.013e-2,
    layer_launch_s=1.549e-5,
    layer_fixed_bytes=2.301e8,
    seq_overhead_s=3.053e-4,
)

# Fitted by ``validate --refit`` on the calibration rows of ``calibration/current.py``.
# attn_eff and hbm_eff sit at their bounds (FlashAttention-3's 75 % of peak; 0.92 of HBM).
TRTLLM_2025 = ServingParams(
    gemm_eff_max=0.6604,
    gemm_half_tokens=356.2,
    attn_eff=0.75,
    hbm_eff=0.92,
    pass_overhead_s=6.666e-4,
    layer_launch_s=1.131e-5,
    layer_fixed_bytes=1.843e7,
    seq_overhead_s=3.274e-6,
    moe_overlap=True,
    # Not fitted here (its calibration rows are dense): the training model's effective overlap
    # efficiency, fitted on Megatron-Core's DeepSeek-V3 H100 run (DeepEP over InfiniBand, the
    # NVIDIA stack's all-to-all); the held-out MoE serving checks test the transfer.
    moe_overlap_eff=EP_OVERLAP_EFFICIENCY,
)

# ``trtllm-2025`` with gemm_eff_max and attn_eff refitted to CloudMatrix384's two figures. It
# keeps the ideal overlap they were fitted under: no measurement pins CloudMatrix's overlap,
# and refitting both constants under 0.266 would move every dense Ascend service ~14 %.
CLOUDMATRIX_2025 = replace(TRTLLM_2025, gemm_eff_max=0.3966, attn_eff=0.4325, moe_overlap_eff=1.0)

PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            "splitwise-2023",
            "Splitwise / vLLM-era (2023), A100/H100 fp16",
            "Patel et al., ISCA 2024, SplitwiseSim data/perf_model.csv",
            SPLITWISE_2023,
        ),
        Profile(
            "trtllm-2025",
            "TensorRT-LLM 1.0 PyTorch backend (2025), H100 SXM FP8",
            "NVIDIA TensorRT-LLM docs/source/performance/perf-overview.md",
            TRTLLM_2025,
        ),
        Profile(
            "cloudmatrix-2025",
            "CloudMatrix-Infer (2025), Ascend 910C CloudMatrix384 INT8",
            "Zuo et al., Serving LLMs on Huawei CloudMatrix384, arXiv:2506.12708",
            CLOUDMATRIX_2025,
        ),
    )
}
DEFAULT_PROFILE = "current"
CHOICES = (DEFAULT_PROFILE, *PROFILES)


def profile_name_for(hardware_id: str, profile: str | None = None) -> str:
    """The concrete profile ``profile`` means on ``hardware_id`` (``current`` resolved)."""
    name = profile or DEFAULT_PROFILE
    if name == DEFAULT_PROFILE:
        return "cloudmatrix-2025" if hardware_id.startswith("ascend") else "trtllm-2025"
    if name not in PROFILES:
        raise ValueError(f"profile: must be one of {', '.join(CHOICES)} (got {name!r})")
    return name


def params_for(hardware_id: str, profile: str | ServingParams | None = None) -> ServingParams:
    """Constants for ``hardware_id`` under ``profile`` (a name, explicit params, or default)."""
    if isinstance(profile, ServingParams):
        return profile
    return PROFILES[profile_name_for(hardware_id, profile)].params
