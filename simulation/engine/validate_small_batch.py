"""Small-batch checks of ``validate`` (issue 35 item 6): one request at a time, per hardware.

* **H100 FP8** (``trtllm-2025``): NIM's Llama-3.3-70B latencies on 2 x H100 at concurrency 1
  (``calibration/small_batch.py``). The 5,000 / 500 row is a calibration row of the
  ``trtllm-2025`` fit (with TensorRT-LLM's throughput rows, :func:`.validate_current.
  fit_trtllm`); the 500 / 2,000 row is held out.
* **A100 FP16/BF16** (``a100-2025``): its kernel constants (GEMM, attention, HBM efficiency)
  are fitted on Splitwise's A100 calibration rows alone (:func:`fit_a100`: A100's own public
  measurements, vLLM-era stack), its fixed costs per pass / layer / sequence are the 2024+
  stack's (``trtllm-2025``); NIM's A100 BF16 TTFT of an 8B model is held out, and Splitwise's
  A100 validation rows are printed under the fitted kernels with their own 2023 overheads.

TTFT is the prefill pass (its last position yields the first token): one request alone on a
replica waits for nothing else. ITL is one decode step at batch 1 and context isl + osl / 2.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .calibration import small_batch as sb
from .calibration import splitwise
from .catalog import get_hardware, get_model
from .perf.inference import decode_breakdown, prefill_breakdown
from .perf.profiles import PROFILES, ServingParams, params_for, profile_name_for

A100_KERNEL_FIELDS = ("gemm_eff_max", "gemm_half_tokens", "attn_eff", "hbm_eff")


def predict(row, p: ServingParams | None = None) -> tuple[float, float]:
    """(TTFT ms, ITL ms) of one request alone on the row's replica."""
    model, hw_id, tp, dtype, isl, osl = row[:6]
    m, hw = get_model(model), get_hardware(hw_id)
    p = p or params_for(hw_id)
    pre = float(prefill_breakdown(m, hw, tp, isl, 1, dtype=dtype, p=p)["total"])
    dec = float(decode_breakdown(m, hw, tp, 1, isl + osl / 2.0, dtype=dtype, p=p)["total"])
    return pre * 1e3, dec * 1e3


def log_errors(rows, p: ServingParams) -> list[float]:
    """|log(twin / published)| of every TTFT and ITL figure in ``rows`` under ``p``."""
    out = []
    for r in rows:
        ttft, itl = predict(r, p)
        out.append(abs(math.log(ttft / r[6])))
        if r[7] is not None:
            out.append(abs(math.log(itl / r[7])))
    return out


def fit_a100(iters: int = 1500) -> tuple[ServingParams, float]:
    """A100 kernel constants from Splitwise's A100 calibration rows (the eight constants are
    fitted there, as for ``splitwise-2023``; the four kernel ones are kept), on top of the
    2024+ stack's fixed costs."""
    from .validate import fit

    rows = [r for r in splitwise.CALIBRATION_ROWS if r[1] == "a100-sxm"]
    p, obj = fit(rows, iters=iters)
    kernels = {n: getattr(p, n) for n in A100_KERNEL_FIELDS}
    return dataclasses.replace(PROFILES["a100-2025"].params, **kernels), obj


def run(out=print, refit: bool = False) -> dict:
    """Print the small-batch report; return its rows."""
    from .validate import summary

    if refit:
        p, obj = fit_a100()
        out(f"a100-2025 kernels refit on Splitwise's A100 calibration rows: objective {obj:.4f}")
        out(", ".join(f"{n}={getattr(p, n):.4g}" for n in A100_KERNEL_FIELDS))
    out("Small batch (one request alone; TTFT = prefill pass, ITL = one decode step)")
    rows = []
    for r in sb.ROWS:
        ttft, itl = predict(r)
        role = "fitted (trtllm-2025)" if r[8] == "cal" else "held out"
        src = sb.NIM_A100_SOURCE if r[1] == "a100-sxm" else sb.NIM_SOURCE
        row = {
            "model": r[0],
            "hardware": r[1],
            "tp": r[2],
            "dtype": r[3],
            "isl": r[4],
            "osl": r[5],
            "profile": profile_name_for(r[1]),
            "ttft_ms": ttft,
            "ttft_published_ms": r[6],
            "ttft_ratio": ttft / r[6],
            "itl_ms": itl,
            "itl_published_ms": r[7],
            "itl_ratio": itl / r[7] if r[7] else None,
            "role": role,
            "source": src,
        }
        rows.append(row)
        itl_txt = f", ITL {r[7]:.2f} -> {itl:.2f} ms (x{itl / r[7]:.2f})" if r[7] else ""
        out(
            f"  {r[0]} {r[1]} TP{r[2]} {r[3]} {r[4]}/{r[5]} [{row['profile']}]: TTFT "
            f"{r[6]:.1f} -> {ttft:.1f} ms (x{ttft / r[6]:.2f}){itl_txt}; {role} ({src})"
        )
    a100 = PROFILES["a100-2025"].params
    val = [r for r in splitwise.VALIDATION_ROWS if r[1] == "a100-sxm"]
    kern = dataclasses.replace(
        PROFILES["splitwise-2023"].params, **{n: getattr(a100, n) for n in A100_KERNEL_FIELDS}
    )
    s = summary(val, kern)
    out(
        f"  a100-2025 kernels with splitwise-2023's overheads on Splitwise's {len(val)} A100 "
        f"validation rows (not fitted): median |err| prefill {s['prefill']['median_abs']:.1%},"
        f" decode {s['decode']['median_abs']:.1%}"
    )
    return {"rows": rows, "a100_splitwise_validation": s}


def median_abs_log(rows: list[dict]) -> float:
    """Median |log ratio| over every TTFT / ITL figure of ``rows``."""
    errs = [abs(math.log(r["ttft_ratio"])) for r in rows]
    errs += [abs(math.log(r["itl_ratio"])) for r in rows if r["itl_ratio"]]
    return float(np.median(errs))
