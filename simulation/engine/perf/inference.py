"""Inference step times from FLOPs and bytes, with per-phase efficiency calibrated on public data.

Roofline with efficiency factors:

* prefill time  = max(FLOPs / (tp * peak * eff_prefill), bytes / (tp * BW * eff_decode))
* decode / token = max(bytes / (tp * BW * eff_decode), FLOPs / (tp * peak * eff_prefill))

where prefill FLOPs = 2*N*tokens + 2*L*tokens^2*(heads*head_dim) (causal attention), and one
decode step of a batch reads the weights once plus every sequence's KV cache. A pure roofline
underestimates real latency several-fold (kernel launch, tensor-parallel all-reduce, scheduling),
so the two efficiencies are *derived in code* from DESIGN.md's two public points
(Llama-2-70B fp16 on 8xH100 at batch 1: prefill of 2,048 tokens ~137 ms, decode ~30 ms/token).
The same factors are applied to other hardware and TP degrees: an approximation (TP all-reduce
cost really grows with tp; no public Ascend calibration exists).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..catalog import HardwareSpec, ModelSpec, get_hardware, get_model


@dataclass(frozen=True)
class CalibrationPoint:
    """One public measurement the efficiency factors are fitted to."""

    model: str
    hardware: str
    tp: int
    batch: int
    prompt_tokens: int
    prefill_s: float
    decode_s_per_token: float


# DESIGN.md section 4: Llama-2-70B fp16, 8xH100, batch 1.
CALIBRATION = CalibrationPoint("llama-2-70b", "h100-sxm", 8, 1, 2048, 0.137, 0.030)


def prefill_flops(model: ModelSpec, tokens: float | np.ndarray, batch: float = 1.0):
    """FLOPs of a prefill over ``tokens`` prompt tokens for ``batch`` sequences."""
    return batch * (
        2.0 * model.params * tokens + 2.0 * model.layers * tokens**2 * model.attention_width
    )


def decode_bytes(model: ModelSpec, batch: float | np.ndarray, context: float | np.ndarray):
    """Bytes read by one decode step: weights once plus each sequence's KV cache."""
    return model.weight_bytes + batch * context * model.kv_bytes_per_token


def decode_flops(model: ModelSpec, batch: float | np.ndarray, context: float | np.ndarray):
    """FLOPs of one decode step (dense matmuls plus attention over the context)."""
    return batch * (2.0 * model.params + 4.0 * model.layers * context * model.attention_width)


@dataclass(frozen=True)
class Efficiency:
    """Fraction of peak compute (prefill) and of peak HBM bandwidth (decode) actually achieved."""

    prefill: float
    decode: float


@lru_cache(maxsize=1)
def calibrated_efficiency() -> Efficiency:
    """Solve the two efficiency factors from :data:`CALIBRATION`.

    At the calibration point prefill is compute-bound and batch-1 decode bandwidth-bound (we
    check both), so each factor follows directly: eff = work / (tp * peak * measured_time).
    Decode is measured right after the 2,048-token prompt, so its KV read uses that context.
    """
    c = CALIBRATION
    m, hw = get_model(c.model), get_hardware(c.hardware)
    eff_p = prefill_flops(m, c.prompt_tokens, c.batch) / (c.tp * hw.peak_flops * c.prefill_s)
    eff_d = decode_bytes(m, c.batch, c.prompt_tokens) / (
        c.tp * hw.hbm_bandwidth_bytes_per_s * c.decode_s_per_token
    )
    # Sanity: the phase we fitted must be the binding roofline term at the calibration point.
    mem_prefill = m.weight_bytes / (c.tp * hw.hbm_bandwidth_bytes_per_s * eff_d)
    cmp_decode = decode_flops(m, c.batch, c.prompt_tokens) / (c.tp * hw.peak_flops * eff_p)
    assert mem_prefill < c.prefill_s and cmp_decode < c.decode_s_per_token
    return Efficiency(prefill=float(eff_p), decode=float(eff_d))


def prefill_seconds(model: ModelSpec, hw: HardwareSpec, tp: int, tokens, batch=1.0):
    """Wall time of a prefill (vectorised over ``tokens``/``batch``)."""
    eff = calibrated_efficiency()
    compute = prefill_flops(model, tokens, batch) / (tp * hw.peak_flops * eff.prefill)
    memory = model.weight_bytes / (tp * hw.hbm_bandwidth_bytes_per_s * eff.decode)
    return np.maximum(compute, memory)


def decode_seconds_per_token(model: ModelSpec, hw: HardwareSpec, tp: int, batch, context):
    """Wall time of one decode step of ``batch`` sequences with mean ``context`` tokens."""
    eff = calibrated_efficiency()
    memory = decode_bytes(model, batch, context) / (tp * hw.hbm_bandwidth_bytes_per_s * eff.decode)
    compute = decode_flops(model, batch, context) / (tp * hw.peak_flops * eff.prefill)
    return np.maximum(memory, compute)


def perf_point(model_id: str, hardware_id: str, tp: int, batch: int, prompt_tokens: int) -> dict:
    """The ``perf`` CLI figures: prefill of the whole batch and decode time per token."""
    m, hw = get_model(model_id), get_hardware(hardware_id)
    pre = float(prefill_seconds(m, hw, tp, prompt_tokens, batch))
    dec = float(decode_seconds_per_token(m, hw, tp, batch, prompt_tokens))
    return {
        "model": model_id,
        "hardware": hardware_id,
        "tp": tp,
        "batch": batch,
        "prompt_tokens": prompt_tokens,
        "prefill_ms": pre * 1e3,
        "decode_ms_per_token": dec * 1e3,
        "decode_tokens_per_s": batch / dec,
        "efficiency_prefill": calibrated_efficiency().prefill,
        "efficiency_decode": calibrated_efficiency().decode,
    }
