"""Published large-run MFU figures and the training model's prediction for each.

Every run is described by what its paper publishes: model shape, device, card count, layout
(TP/PP/CP/DP), sequence length, global batch, recomputation, pipeline interleaving and which
communication it overlaps, and the fabric (per-GPU NIC bandwidth, non-blocking domain size,
oversubscription above it). Nothing here is tuned per run. ``held_out`` marks the dense
175B-405B runs on 10k+ GPUs the model was *not* calibrated on; the calibration set (the only
figures :data:`..perf.train_model.STACK_FACTOR` was fitted to) is Megatron-LM 2021.
"""

from __future__ import annotations

from .catalog import get_hardware, get_model
from .perf.train_model import Fabric, Shape, shape_of, step_time

# Meta's RoCE cluster for Llama 3: 8 x H100 per server over NVLink, 400 Gb/s per GPU,
# 3,072-GPU pods with full bisection, 1:7 oversubscription between pods (Llama 3 paper 3.3.1).
LLAMA3_FABRIC = Fabric(8, 16, 3072, 450e9, 50e9, 1.0, 1.0, 7.0)
# ByteDance MegaScale: A100 servers, 8 x 200 Gb/s NICs, three-tier Clos built 1:1 (paper 3.6;
# per-GPU 200 Gb/s is the DGX A100 norm, an assumption where the paper is silent).
MEGASCALE_FABRIC = Fabric(8, 64, 4096, 300e9, 25e9, 1.0, 1.0, 1.0)
# Selene-like DGX A100 SuperPOD for Megatron-LM 2021 (8 x 200 Gb/s HDR per server, fat tree).
SELENE_FABRIC = Fabric(8, 160, 4480, 300e9, 25e9, 1.0, 1.0, 1.0)

MT_NLG_530B = Shape(530e9, 530e9, 105, 20480, 20480, 20480, 1, 51_200)
GPT_1T = Shape(1008e9, 1008e9, 128, 25600, 25600, 25600, 1, 51_200)

REFERENCE_RUNS: list[dict] = [
    {
        "name": "Llama 3 405B, 8,192 H100, TP8 PP16 DP64, seq 8k",
        "source": "Dubey et al. 2024, The Llama 3 Herd of Models, Table 4 (43% BF16 MFU)",
        "published_mfu": 0.43,
        "held_out": False,
        "model": "llama-3-405b",
        "hardware": "h100-sxm",
        "cards": 8192,
        "kw": dict(
            tp=8,
            pp=16,
            seq_len=8192,
            global_batch_tokens=16 * 2**20,
            vpp=0,
            balance_stages=True,
            fabric=LLAMA3_FABRIC,
        ),
    },
    {
        "name": "Llama 3 405B, 16,384 H100, TP8 PP16 DP128, seq 8k",
        "source": "Dubey et al. 2024, Table 4 (41% BF16 MFU)",
        "published_mfu": 0.41,
        "held_out": True,
        "model": "llama-3-405b",
        "hardware": "h100-sxm",
        "cards": 16384,
        "kw": dict(
            tp=8,
            pp=16,
            seq_len=8192,
            global_batch_tokens=16 * 2**20,
            vpp=0,
            balance_stages=True,
            fabric=LLAMA3_FABRIC,
        ),
    },
    {
        "name": "Llama 3 405B, 16,384 H100, TP8 CP16 PP16 DP8, seq 128k",
        "source": "Dubey et al. 2024, Table 4 (38% BF16 MFU)",
        "published_mfu": 0.38,
        "held_out": True,
        "model": "llama-3-405b",
        "hardware": "h100-sxm",
        "cards": 16384,
        "kw": dict(
            tp=8,
            pp=16,
            cp=16,
            seq_len=131072,
            global_batch_tokens=16 * 2**20,
            vpp=0,
            balance_stages=True,
            fabric=LLAMA3_FABRIC,
        ),
    },
    {
        "name": "GPT-3 175B, 12,288 A100, MegaScale (PTB, overlapped TP/DP/PP)",
        "source": "Jiang et al., NSDI 2024, MegaScale (55.2% MFU, batch 6,144, seq 2,048)",
        "published_mfu": 0.552,
        "held_out": True,
        "model": "gpt-3-175b",
        "hardware": "a100-sxm",
        "cards": 12288,
        "kw": dict(
            tp=8,
            pp=8,
            seq_len=2048,
            global_batch_tokens=6144 * 2048,
            vpp=0,
            parallel_block=True,
            tp_overlap=0.8,
            fabric=MEGASCALE_FABRIC,
        ),
    },
    {
        "name": "GPT-3 175B, 12,288 A100, Megatron-LM baseline",
        "source": "Jiang et al., NSDI 2024: MegaScale is 1.34x Megatron-LM (55.2/1.34 = 41.2%)",
        "published_mfu": 0.552 / 1.34,
        "held_out": True,
        "model": "gpt-3-175b",
        "hardware": "a100-sxm",
        "cards": 12288,
        "kw": dict(
            tp=8, pp=8, seq_len=2048, global_batch_tokens=6144 * 2048, fabric=MEGASCALE_FABRIC
        ),
    },
    {
        "name": "GPT 175B, 1,536 A100, Megatron-LM TP8 PP8 (calibration)",
        "source": "Narayanan et al., SC21, Table 1: 153 TFLOP/s = 49% incl. recompute -> x3/4",
        "published_mfu": 0.49 * 0.75,
        "held_out": False,
        "model": "gpt-3-175b",
        "hardware": "a100-sxm",
        "cards": 1536,
        "kw": dict(
            tp=8,
            pp=8,
            seq_len=2048,
            global_batch_tokens=1536 * 2048,
            recompute="full",
            fabric=SELENE_FABRIC,
        ),
    },
    {
        "name": "GPT 530B, 2,240 A100, Megatron-LM TP8 PP35 (calibration)",
        "source": "Narayanan et al., SC21, Table 1: 163 TFLOP/s = 52% incl. recompute -> x3/4",
        "published_mfu": 0.52 * 0.75,
        "held_out": False,
        "shape": MT_NLG_530B,
        "hardware": "a100-sxm",
        "cards": 2240,
        "kw": dict(
            tp=8,
            pp=35,
            seq_len=2048,
            global_batch_tokens=2240 * 2048,
            recompute="full",
            fabric=SELENE_FABRIC,
        ),
    },
    {
        "name": "GPT 1T, 3,072 A100, Megatron-LM TP8 PP64 (calibration)",
        "source": "Narayanan et al., SC21, Table 1: 163 TFLOP/s = 52% incl. recompute -> x3/4",
        "published_mfu": 0.52 * 0.75,
        "held_out": False,
        "shape": GPT_1T,
        "hardware": "a100-sxm",
        "cards": 3072,
        "kw": dict(
            tp=8,
            pp=64,
            seq_len=2048,
            global_batch_tokens=3072 * 2048,
            recompute="full",
            fabric=SELENE_FABRIC,
        ),
    },
]

# Published figures deliberately not compared, and why.
NOT_COMPARED = [
    (
        "PaLM 540B, 6,144 TPU v4: 46.2% MFU (Chowdhery et al. 2022)",
        "TPU v4 and its 3D-torus ICI are not in the hardware/fabric model",
    ),
    (
        "OPT-175B, 992 A100: ~147 TFLOP/s per GPU (Zhang et al. 2022)",
        "FSDP (ZeRO-3) parameter gathers per micro-batch are not modelled; < 10k GPUs",
    ),
]


def training_validation() -> list[dict]:
    """One row per reference run: published MFU, the twin's MFU, error in points."""
    out = []
    for r in REFERENCE_RUNS:
        shape = r.get("shape") or shape_of(get_model(r["model"]), 0.0)
        res = step_time(shape, get_hardware(r["hardware"]), r["cards"], **r["kw"])
        out.append(
            {
                "name": r["name"],
                "source": r["source"],
                "held_out": r["held_out"],
                "published_mfu": r["published_mfu"],
                "twin_mfu": res["mfu"],
                "error_points": 100.0 * (res["mfu"] - r["published_mfu"]),
                "comm_share": res["comm_share"],
                "bubble_share": res["bubble_share"],
            }
        )
    return out
