"""Current-stack checks of ``validate``: 2024+ serving throughput, MoE serving and training.

* **Offline throughput** (TensorRT-LLM's published H100 table, ``calibration/current.py``):
  every request queued at once, so a replica runs as many sequences as its KV cache holds
  (capped at ``MAX_BATCH``); a request costs its share of a batched prefill
  (``MAX_TOKENS`` prompt tokens per pass) plus ``osl`` decode steps shared by the batch::

      tokens/s = osl / (prefill(isl, nb) / nb + osl x decode(B, isl + osl/2) / B)

  The ``trtllm-2025`` profile is fitted (``--refit``) to the ``cal`` rows only.
* **MoE serving at a TPOT bound** (CloudMatrix384, DeepSeek, SGLang): the largest per-card
  batch whose decode step (MTP: 2 query tokens per sequence, 1.8 tokens kept) meets the
  published TPOT, tokens/s per card at it; prefill at the best batch.
* **MoE training** (DeepSeek-V3): tokens/s per GPU of the published layout with the report's
  communication mechanisms (DualPipe overlap of the expert all-to-all on 112 of 132 SMs' worth
  of compute, FP8 dispatch, routing to at most 4 nodes, FP8 GEMMs), vs 180K GPU hours per
  trillion tokens; the serialised run is printed next to it. The overlap realises only
  ``train_model.EP_OVERLAP_EFFICIENCY`` of its ideal, fitted (``--refit``) on a published
  Megatron-Core run of the same model on 1,024 H100 (``megatron_dsv3_training``), not on
  DeepSeek's own figure.
* **Expert all-to-all bandwidth**: both tiers at ``perf.inference.A2A_EFFICIENCY`` (0.8) of the
  link, from DeepEP's published H800 kernel table; MLA decode attention at most FlashMLA's
  published rate (``perf.inference.MLA_DECODE_EFF``).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .calibration import current as cur
from .catalog import HardwareSpec, get_hardware, get_model
from .perf.fabric import DTYPE_BYTES
from .perf.inference import decode_breakdown, kv_replication, prefill_seconds, weights_fit
from .perf.operating import best_prefill_per_card, decode_at_tpot
from .perf.profiles import FITTED, PROFILES, ServingParams

MAX_BATCH = 2048  # trtllm-bench's largest max_batch_size in the published recipes
MAX_TOKENS = 8192  # prompt tokens per batched prefill pass (max_num_tokens)
KV_FRACTION = 0.9  # kv_cache_free_gpu_mem_fraction (the published default)

# H800 (DeepSeek's part): H100 SXM compute and HBM; its NVLink is in ``perf.fabric``.
H800 = dataclasses.replace(get_hardware("h100-sxm"), id="h800-sxm", name="NVIDIA H800 SXM5")


def offline_tokens_per_s(
    model_id, hw: HardwareSpec, tp, ep, dtype, isl, osl, p, kv_dtype="fp8"
) -> float:
    """Output tokens/s of one replica in an offline max-throughput run (module doc). The
    FP8 checkpoints of the published runs also quantise the KV cache (``kv_dtype``)."""
    m = get_model(model_id)
    cards = max(tp, ep)
    ctx = isl + osl / 2.0
    free = weights_fit(m, hw, tp, ep, dtype) * cards * KV_FRACTION
    kv_token = m.kv_bytes_per_token * DTYPE_BYTES[kv_dtype] / 2.0 * float(kv_replication(m, tp))
    batch = float(min(MAX_BATCH, max(math.floor(free / (ctx * kv_token)), 1)))
    nb = max(1, MAX_TOKENS // isl)
    pre = float(prefill_seconds(m, hw, tp, isl, nb, ep=ep, dtype=dtype, profile=p)) / nb
    dec = float(
        decode_breakdown(m, hw, tp, batch, ctx, ep=ep, dtype=dtype, p=p, kv_dtype=kv_dtype)["total"]
    )
    return osl / (pre + osl * dec / batch)


def throughput_rows(rows=cur.TRTLLM_H100, p: ServingParams | None = None) -> list[dict]:
    """Published vs predicted output tokens/s for each TensorRT-LLM row."""
    p = p or PROFILES["trtllm-2025"].params
    hw = get_hardware("h100-sxm")
    out = []
    for model, tp, ep, isl, osl, published, role in rows:
        twin = offline_tokens_per_s(model, hw, tp, ep, "fp8", isl, osl, p)
        out.append(
            {
                "model": model,
                "tp": tp,
                "ep": ep,
                "isl": isl,
                "osl": osl,
                "published": published,
                "twin": twin,
                "ratio": twin / published,
                "role": role,
            }
        )
    return out


def _fit_objective(x: np.ndarray, start: ServingParams, rows) -> float:
    from .validate import with_values

    p = with_values(start, x)
    # Physical bounds: HBM as in the Splitwise fit; attention at most FlashAttention-3's
    # published 740 TFLOPS BF16 on H100 (75 % of peak; Shah et al. 2024).
    if p.gemm_eff_max > 0.85 or p.attn_eff > 0.75 or p.hbm_eff > 0.92:
        return 1e9
    from . import validate_small_batch as vsb
    from .calibration import small_batch

    errs = [abs(math.log(r["ratio"])) for r in throughput_rows(rows, p)]
    # H100's own single-request figures (NIM, 2 x H100 FP8): the calibration rows only.
    errs += vsb.log_errors([r for r in small_batch.NIM_H100 if r[8] == "cal"], p)
    return float(np.mean(errs))


def fit_trtllm(iters: int = 1200) -> tuple[ServingParams, float]:
    """Refit ``trtllm-2025`` on the calibration rows (Nelder-Mead on log-parameters): the
    TensorRT-LLM throughput rows and NIM's calibration row of single-request latency."""
    from .validate import nelder_mead, with_values

    start = PROFILES["trtllm-2025"].params
    # Start strictly inside the bounds: a simplex whose vertex sits on a bound cannot move it.
    start = dataclasses.replace(
        start, attn_eff=min(start.attn_eff, 0.72), hbm_eff=min(start.hbm_eff, 0.9)
    )
    x0 = np.log(np.array([getattr(start, n) for n in FITTED]))
    best, val = nelder_mead(lambda x: _fit_objective(x, start, cur.CALIBRATION), x0, iters)
    return with_values(start, best), val


CLOUDMATRIX_FITTED = ("gemm_eff_max", "attn_eff")


def _cloudmatrix_fit_figures(p: ServingParams) -> tuple[float, float]:
    c910 = get_hardware("ascend-910c")
    pre = best_prefill_per_card("deepseek-r1", c910, 16, "int8", 4096, profile=p)
    dec = decode_at_tpot("deepseek-r1", c910, 320, "int8", 4096, 0.050, profile=p)
    return pre, dec["tokens_per_s"]


def fit_cloudmatrix(iters: int = 300) -> tuple[ServingParams, float]:
    """Refit ``cloudmatrix-2025``'s GEMM efficiency (pinned by the paper's prefill figure) and
    attention efficiency (its TPOT < 50 ms decode figure); its other constants stay."""
    from .validate import nelder_mead

    start = PROFILES["cloudmatrix-2025"].params
    # The overlap the CloudMatrix constants are fitted under is the profile's own (ideal).
    base = start  # the overlap and MTP acceptance it is fitted under are its own

    def params(x):
        return dataclasses.replace(
            base, **dict(zip(CLOUDMATRIX_FITTED, map(float, np.exp(x)), strict=True))
        )

    def objective(x):
        p = params(x)
        if p.gemm_eff_max > 0.85:
            return 1e9
        pre, dec = _cloudmatrix_fit_figures(p)
        return abs(math.log(pre / 6688.0)) + abs(math.log(dec / 1943.0))

    x0 = np.log(np.array([getattr(start, n) for n in CLOUDMATRIX_FITTED]))
    best, val = nelder_mead(objective, x0, iters)
    return params(best), val


def moe_serving_checks() -> list[dict]:
    """MoE serving figures of published systems vs the twin (default profile per part)."""
    c910 = get_hardware("ascend-910c")
    h100 = get_hardware("h100-sxm")
    ds = "deepseek-r1"
    rows = []

    def add(name, source, role, published, twin, unit, note=""):
        rows.append(
            {
                "name": name,
                "source": source,
                "role": role,
                "published": published,
                "twin": twin,
                "ratio": twin / published,
                "unit": unit,
                "note": note,
            }
        )

    d50 = decode_at_tpot(ds, c910, 320, "int8", 4096, 0.050)
    add(
        "DeepSeek-R1 decode, 910C EP320 INT8, TPOT < 50 ms",
        cur.CLOUDMATRIX_SOURCE,
        "fitted (cloudmatrix-2025)",
        1943.0,
        d50["tokens_per_s"],
        "tokens/s/NPU",
        f"batch {d50['batch_per_card']:.0f}/NPU, TPOT {d50['tpot_ms']:.1f} ms",
    )
    pre = best_prefill_per_card(ds, c910, 16, "int8", 4096)
    add(
        "DeepSeek-R1 prefill, 910C EP16 INT8, 4K prompts",
        cur.CLOUDMATRIX_SOURCE,
        "fitted (cloudmatrix-2025)",
        6688.0,
        pre,
        "tokens/s/NPU",
    )
    d15 = decode_at_tpot(ds, c910, 320, "int8", 4096, 0.015)
    add(
        "DeepSeek-R1 decode, 910C EP320 INT8, TPOT < 15 ms",
        cur.CLOUDMATRIX_SOURCE,
        "held out",
        538.0,
        d15["tokens_per_s"],
        "tokens/s/NPU",
        f"batch {d15['batch_per_card']:.0f}/NPU, TPOT {d15['tpot_ms']:.1f} ms",
    )
    dsd = decode_at_tpot(ds, H800, 144, "fp8", 4096, 1.0 / 21.0)
    add(
        "DeepSeek-V3/R1 decode, H800 EP144 FP8, 21 tokens/s per user",
        cur.DEEPSEEK_SERVING_SOURCE,
        "held out",
        14800.0 / 8.0,
        dsd["tokens_per_s"],
        "tokens/s/GPU",
        f"batch {dsd['batch_per_card']:.0f}/GPU, 4K context assumed",
    )
    sgl = decode_at_tpot(ds, h100, 72, "fp8", 2000, 0.100, mtp=False)
    add(
        "DeepSeek-V3 decode, H100 EP72 FP8 (SGLang), ITL ~100 ms",
        cur.SGLANG_SOURCE,
        "held out",
        22300.0 / 8.0,
        sgl["tokens_per_s"],
        "tokens/s/GPU",
        f"batch {sgl['batch_per_card']:.0f}/GPU, no MTP",
    )
    return rows


def cloudmatrix_operator_checks() -> list[dict]:
    """CloudMatrix-Infer's per-operator decode figures vs the twin (held out: nothing fitted
    to them). A decode layer = (step - pass overhead) / layers at batch 96 per NPU, 4K KV;
    the pipeline gain = serialised / overlapped step - 1; dispatch / combine of 128 tokens
    per rank as in the paper's operator benchmark (two ranks, one per die, per 910C)."""
    from .perf.fabric import fabric
    from .perf.inference import alltoall_seconds

    m, c910 = get_model("deepseek-r1"), get_hardware("ascend-910c")
    p = PROFILES["cloudmatrix-2025"].params

    def step(batch, q=1.0, overlap=None):
        d = decode_breakdown(
            m,
            c910,
            1,
            batch * 320,
            4096,
            ep=320,
            dtype="int8",
            p=p,
            query_tokens=q,
            overlap=overlap,
        )
        return float(d["total"])

    def layer_us(q):
        return (step(96, q) - p.pass_overhead_s) / m.layers * 1e6

    rows = []
    for key, q in (("no_mtp", 1.0), ("mtp", 2.0)):
        pub = cur.CLOUDMATRIX_LAYER_US[key]
        twin = layer_us(q)
        rows.append(("decode layer, batch 96/NPU, " + key.replace("_", " "), pub, twin, "us"))
    for b, gain in cur.CLOUDMATRIX_MICROBATCH_GAIN.items():
        twin = step(b, overlap=False) / step(b) - 1.0
        rows.append((f"micro-batch pipeline gain, batch {b}/NPU", gain * 100, twin * 100, "%"))
    fab = fabric(c910)
    hop = fab.a2a_hop_s or fab.allreduce_hop_s
    units = 128 * 8 * 7168  # 128 tokens x top-8 x hidden, one die's rank (half a 910C)
    for (phase, ep), pub in cur.CLOUDMATRIX_A2A_US.items():
        nbytes = units * (1.0 if phase == "dispatch" else 2.0)
        # One die's rank: half the package's bandwidth, i.e. a whole package moving 2x.
        twin = float(alltoall_seconds(2 * nbytes, ep, fab, hop, phase=phase)) * 1e6
        rows.append((f"{phase} EP{ep}, 128 tokens/rank", pub, twin, "us"))
    return [
        {
            "name": name,
            "published": pub,
            "twin": twin,
            "ratio": twin / pub,
            "unit": unit,
            "role": "calibration (perf.fabric)" if "tokens/rank" in name else "held out",
        }
        for name, pub, twin, unit in rows
    ]


def deepseek_v3_training(overlap: bool = True) -> dict:
    """DeepSeek-V3 pre-training on 2,048 H800 (published layout) vs its GPU-hour figure."""
    from .perf.train_model import Fabric, shape_of, step_time

    fab = Fabric(8, 8, 2048, 200e9, 50e9, 1.0, 1.0, 1.0)  # 8 GPUs/node, IB fat tree
    res = step_time(
        shape_of(get_model("deepseek-r1"), 0.0),
        H800,
        2048,
        1,
        16,
        ep=64,
        seq_len=4096,
        global_batch_tokens=15360 * 4096,
        vpp=1,
        recompute="selective",
        fabric=fab,
        gemm_dtype="fp8",
        ep_overlap=overlap,
        ep_dispatch_bytes=1.0,  # FP8 dispatch, BF16 combine (report section 3.3)
        ep_node_limit=4,  # each token to at most 4 nodes (report section 2.1.2)
        overlap_compute_share=112.0 / 132.0,  # 20 SMs run the all-to-all (section 3.2.2)
    )
    published = 1e12 / (180e3 * 3600.0)  # tokens/s per GPU
    # The published rate as MFU in the twin's convention (6N + 12 L d s FLOPs per token over
    # the BF16 dense peak), so the two MFUs compare like for like.
    flops_token = res["mfu"] * 2048 * H800.peak_flops / res["tokens_per_s"]
    return {
        "name": "DeepSeek-V3 pre-training, 2,048 H800, PP16 EP64, FP8, DualPipe overlap",
        "source": cur.DEEPSEEK_TRAINING_SOURCE,
        "role": "held out",
        "published": published,
        "twin": res["tokens_per_s"] / 2048.0,
        "ratio": res["tokens_per_s"] / 2048.0 / published,
        "unit": "tokens/s/GPU",
        "mfu": res["mfu"],
        "mfu_published": published * flops_token / H800.peak_flops,
        "comm_share": res["comm_share"],
        "note": f"MFU {res['mfu']:.1%} vs {published * flops_token / H800.peak_flops:.1%}, "
        f"{res['comm_share']:.0%} of the step communicating",
    }


def megatron_dsv3_training() -> dict:
    """DeepSeek-V3 on 1,024 H100 in Megatron-Core (the MoE training calibration row)."""
    from .perf.train_model import Fabric, shape_of, step_time

    h100 = get_hardware("h100-sxm")
    res = step_time(
        shape_of(get_model("deepseek-r1"), 0.0),
        h100,
        1024,
        2,
        8,
        ep=64,
        seq_len=4096,
        global_batch_tokens=8192 * 4096,
        vpp=4,
        recompute="selective",
        fabric=Fabric(8, 8, 1024, 450e9, 50e9, 1.0, 1.0, 1.0),
        gemm_dtype="fp8",
        ep_overlap=True,  # --overlap-moe-expert-parallel-comm (1F1B all-to-all overlap)
        ep_dispatch_bytes=2.0,  # BF16 dispatch
        ep_node_limit=4,  # DeepSeek-V3's group-limited routing (4 of 8 groups)
        overlap_compute_share=112.0 / 132.0,  # DeepEP's 20 communication SMs
    )
    published = cur.MEGATRON_DSV3_H100_TOKENS_PER_GPU
    twin = res["tokens_per_s"] / 1024.0
    return {
        "name": "DeepSeek-V3 training, 1,024 H100, TP2 PP8 EP64, FP8 (Megatron-Core)",
        "source": cur.MEGATRON_SOURCE,
        "role": "fitted (EP_OVERLAP_EFFICIENCY)",
        "published": published,
        "twin": twin,
        "ratio": twin / published,
        "unit": "tokens/s/GPU",
        "note": f"MFU {res['mfu']:.1%}, {res['comm_share']:.0%} of the step communicating",
    }


def fit_ep_overlap() -> float:
    """Bisect ``train_model.EP_OVERLAP_EFFICIENCY`` so the Megatron-Core row matches."""
    from .perf import train_model

    saved = train_model.EP_OVERLAP_EFFICIENCY
    lo, hi = 0.0, 1.0
    try:
        for _ in range(30):
            train_model.EP_OVERLAP_EFFICIENCY = (lo + hi) / 2.0
            if megatron_dsv3_training()["ratio"] > 1.0:
                hi = train_model.EP_OVERLAP_EFFICIENCY
            else:
                lo = train_model.EP_OVERLAP_EFFICIENCY
    finally:
        train_model.EP_OVERLAP_EFFICIENCY = saved
    return (lo + hi) / 2.0


def run(out=print, refit: bool = False) -> dict:
    """Print the current-stack report; return its figures."""
    p = PROFILES["trtllm-2025"].params
    if refit:
        p, obj = fit_trtllm()
        out(f"trtllm-2025 refit on {len(cur.CALIBRATION)} rows: objective {obj:.4f}")
        out("TRTLLM_2025 = ServingParams(")
        for n in FITTED:
            out(f"    {n}={getattr(p, n):.4g},")
        out(")")
        c, obj = fit_cloudmatrix()
        out(f"cloudmatrix-2025 refit on 2 CloudMatrix384 figures: objective {obj:.4f}")
        out(", ".join(f"{n}={getattr(c, n):.4g}" for n in CLOUDMATRIX_FITTED))
        out(f"EP_OVERLAP_EFFICIENCY refit on the Megatron-Core row: {fit_ep_overlap():.4f}")
    out(f"Current stack (trtllm-2025): {cur.TRTLLM_SOURCE}")
    out(f"  {'model':<16}{'tp':>3}{'ep':>3}{'isl':>6}{'osl':>6}{'published':>11}{'twin':>9}  ratio")
    rows = throughput_rows(p=p)
    for r in rows:
        out(
            f"  {r['model']:<16}{r['tp']:>3}{r['ep']:>3}{r['isl']:>6}{r['osl']:>6}"
            f"{r['published']:>11,.0f}{r['twin']:>9,.0f}  {r['ratio']:.2f} {r['role']}"
        )
    res: dict = {"throughput": rows}
    for role in ("cal", "val"):
        ratios = np.array([r["ratio"] for r in rows if r["role"] == role])
        res[role] = {
            "median_abs_log": float(np.median(np.abs(np.log(ratios)))),
            "ratio_min": float(ratios.min()),
            "ratio_max": float(ratios.max()),
        }
    from .validate_tables import trtllm_groups

    for g in trtllm_groups(rows):
        out(
            f"  {g['role']}: {g['label']} ({g['rows']} rows): median |log ratio| "
            f"{g['median_abs_log']:.3f} (ratio {g['ratio_min']:.2f}-{g['ratio_max']:.2f})"
        )
    out("MoE serving and training (published figure -> twin, ratio twin/published)")
    serial = deepseek_v3_training(overlap=False)
    checks = moe_serving_checks() + [megatron_dsv3_training(), deepseek_v3_training()]
    checks[-1]["note"] += (
        f"; without the overlap {serial['twin']:,.0f} tokens/s/GPU, MFU {serial['mfu']:.1%}"
    )
    for c in checks:
        out(
            f"  {c['name']}: {c['published']:,.0f} -> {c['twin']:,.0f} {c['unit']} "
            f"(x{c['ratio']:.2f}, {c['role']}; {c['source']})"
            + (f" [{c['note']}]" if c.get("note") else "")
        )
    res["moe"] = checks
    out(f"CloudMatrix-Infer per-operator figures ({cur.CLOUDMATRIX_SOURCE}; published -> twin)")
    res["operators"] = cloudmatrix_operator_checks()
    for c in res["operators"]:
        out(
            f"  {c['name']}: {c['published']:,.1f} -> {c['twin']:,.1f} {c['unit']} "
            f"(x{c['ratio']:.2f}, {c['role']})"
        )
    return res
