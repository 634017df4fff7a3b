"""Inference step times from FLOPs and bytes, with per-phase terms calibrated on public data.

Model (per replica of ``tp`` tensor-parallel cards)::

    prefill = max(FLOPs / (tp peak eta_mm), weights / (tp BW eta_bw)) + TP_comm_prefill
    decode  = max(bytes / (tp BW eta_bw), FLOPs / (tp peak eta_mm)) + L (k + s(tp))

* FLOPs of a prefill = 2 N tokens + 2 L tokens^2 (heads x head_dim) (causal attention); one
  decode step reads the weights once plus every sequence's KV cache.
* ``eta_mm = 0.6`` (large BF16 GEMMs) and ``eta_bw = 0.8`` (achievable HBM streaming) are
  *assumptions* typical of H100-class parts; ``k = 10 us`` per layer of kernel launches.
* Two terms are *fitted in code* to DESIGN.md's two public points (Llama-2-70B fp16, 8xH100,
  batch 1: prefill of 2,048 tokens ~137 ms, decode ~30 ms/token):
  the effective tensor-parallel all-reduce bandwidth for prefill activations (2 all-reduces per
  layer of ``tokens x hidden x 2`` bytes, ring factor 2(tp-1)/tp), and the per-layer TP
  synchronisation time of a decode step (scaled by log2(tp)/3 for other tp; 0 at tp=1).
  A pure roofline underestimates real latency several-fold exactly because of those terms.
* The fitted link figures are applied to every hardware (no public Ascend calibration exists):
  an approximation, documented in the README.
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


ETA_MM = 0.6
ETA_BW = 0.8
KERNEL_S_PER_LAYER = 10e-6


@dataclass(frozen=True)
class Efficiency:
    """Assumed efficiencies plus the two terms fitted to :data:`CALIBRATION`."""

    mm: float
    bw: float
    kernel_s_per_layer: float
    tp_link_bytes_per_s: float
    tp_sync_s_per_layer_at_8: float


def _prefill_comm_bytes(model, tokens, batch, tp):
    ring = 2.0 * (tp - 1) / tp
    return batch * 2.0 * model.layers * tokens * model.hidden * 2.0 * ring


def _sync_scale(tp):
    return np.log2(np.maximum(tp, 1)) / 3.0


@lru_cache(maxsize=1)
def calibrated_efficiency() -> Efficiency:
    """Fit the TP link bandwidth and TP sync time so the calibration point is reproduced.

    Raises ``AssertionError`` if the assumed efficiencies alone already exceed the measured
    times (the fit would need negative communication time).
    """
    c = CALIBRATION
    m, hw = get_model(c.model), get_hardware(c.hardware)
    compute = prefill_flops(m, c.prompt_tokens, c.batch) / (c.tp * hw.peak_flops * ETA_MM)
    mem = m.weight_bytes / (c.tp * hw.hbm_bandwidth_bytes_per_s * ETA_BW)
    comm_s = c.prefill_s - max(compute, mem) - m.layers * KERNEL_S_PER_LAYER
    assert comm_s > 0
    link = _prefill_comm_bytes(m, c.prompt_tokens, c.batch, c.tp) / comm_s
    dec_mem = decode_bytes(m, c.batch, c.prompt_tokens) / (
        c.tp * hw.hbm_bandwidth_bytes_per_s * ETA_BW
    )
    dec_cmp = decode_flops(m, c.batch, c.prompt_tokens) / (c.tp * hw.peak_flops * ETA_MM)
    sync = (c.decode_s_per_token - max(dec_mem, dec_cmp)) / m.layers - KERNEL_S_PER_LAYER
    assert sync > 0
    return Efficiency(
        ETA_MM, ETA_BW, KERNEL_S_PER_LAYER, float(link), float(sync / _sync_scale(c.tp))
    )


def prefill_seconds(model, hw: HardwareSpec, tp, tokens, batch=1.0):
    """Wall time of a prefill (vectorised over ``tokens``/``batch``/model arrays)."""
    e = calibrated_efficiency()
    compute = prefill_flops(model, tokens, batch) / (tp * hw.peak_flops * e.mm)
    memory = model.weight_bytes / (tp * hw.hbm_bandwidth_bytes_per_s * e.bw)
    comm = _prefill_comm_bytes(model, tokens, batch, tp) / e.tp_link_bytes_per_s
    return np.maximum(compute, memory) + comm + model.layers * e.kernel_s_per_layer


def decode_seconds_per_token(model, hw: HardwareSpec, tp, batch, context):
    """Wall time of one decode step of ``batch`` sequences with mean ``context`` tokens."""
    e = calibrated_efficiency()
    memory = decode_bytes(model, batch, context) / (tp * hw.hbm_bandwidth_bytes_per_s * e.bw)
    compute = decode_flops(model, batch, context) / (tp * hw.peak_flops * e.mm)
    overhead = model.layers * (e.kernel_s_per_layer + e.tp_sync_s_per_layer_at_8 * _sync_scale(tp))
    return np.maximum(memory, compute) + overhead


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
        "calibration": dict(calibrated_efficiency().__dict__),
    }
