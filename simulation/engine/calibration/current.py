"""Published throughput of 2024+ serving and training stacks (data only; see ``validate_current``).

**TensorRT-LLM 1.0** (PyTorch backend), NVIDIA, ``docs/source/performance/perf-overview.md``,
https://github.com/NVIDIA/TensorRT-LLM (commit 00f37686aa854010d68bcbd0f4ab000221541ca6),
"Throughput Measurements" tables, column *H100 SXM 80GB (DGX H100)*: total output tokens/s of
an offline run (``trtllm-bench throughput``: all requests queued at once, fixed input/output
lengths ISL/OSL, FP8 weights from NVIDIA's ModelOpt checkpoints). Rows
``(model, tp, ep, isl, osl, output tokens/s, role)``; ``role`` is ``cal`` (fitted) or ``val``
(held out). Llama 3.1 8B on one GPU and Llama 3.3 70B on TP2 alternate cal / val; Llama 3.1
405B (TP8) and Qwen3-235B-A22B (MoE, TP8) are held out entirely. Llama 3.1 8B / 3.3 70B have
the shapes of the catalog's ``llama-3-8b`` / ``llama-3-70b``.

**MoE serving and training** (held out; each a figure of its source, quoted as published):

* CloudMatrix384 — Zuo et al., "Serving Large Language Models on Huawei CloudMatrix384",
  arXiv:2506.12708 (2025), abstract and section 5 (evaluation): DeepSeek-R1, INT8, 910C,
  prefill 6,688 tokens/s per NPU; decode 1,943 tokens/s per NPU at TPOT < 50 ms with EP320
  (batch 96 per NPU, 4K KV length as we read its decode table); 538 tokens/s per NPU at
  TPOT < 15 ms. Decode uses multi-token prediction (MTP).
* DeepSeek — "Day 6: One More Thing, DeepSeek-V3/R1 Inference System Overview",
  https://github.com/deepseek-ai/open-infra-index (2025-03-01): per H800 node 73.7k input
  tokens/s in prefill (including cache hits) and 14.8k output tokens/s in decode; decode EP144;
  average output speed 20–22 tokens/s per user; MTP on.
* SGLang — "Deploying DeepSeek with PD Disaggregation and Large-scale Expert Parallelism on 96
  H100 GPUs", https://lmsys.org/blog/2025-05-05-large-scale-ep/ : 22.3k output tokens/s per
  8-GPU node in decode (2,000-token inputs), ITL ~100 ms (its "limitations"), no MTP.
* DeepSeek-V3 training — DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437,
  section 1 / Table 1: 180K H800 GPU hours per trillion tokens on 2,048 H800 (section 3.2:
  16-way PP with DualPipe, 64-way EP over 8 nodes, ZeRO-1 DP, no TP; FP8 GEMMs; sequence
  4K, batch up to 15,360 sequences) = 1,543 tokens/s per GPU.

**MoE training calibration** (fitted, not held out): Megatron-Bridge (NVIDIA NeMo 25.09)
``docs/performance-summary.md``, https://github.com/NVIDIA-NeMo/Megatron-Bridge, "Pre-Training
Performance", System DGX-H100: DeepSeekV3 (dropless) on 1,024 H100, GBS 8192, MBS 1, sequence
4096, TP2 PP8 VP4 EP64, FP8, 1,297 tokens/s per GPU (338 model TFLOP/s per GPU).
It pins ``perf.train_model.EP_OVERLAP_EFFICIENCY``; the DeepSeek-V3 report's figure stays
held out.
"""

from __future__ import annotations

TRTLLM_SOURCE = (
    "NVIDIA TensorRT-LLM 1.0 perf-overview.md (github.com/NVIDIA/TensorRT-LLM, commit "
    "00f3768), Throughput Measurements, H100 SXM column"
)

# (model, tp, ep, isl, osl, published total output tokens/s, role)
TRTLLM_H100: tuple[tuple[str, int, int, int, int, float, str], ...] = (
    # Llama 3.1 8B, H100 TP1 (FP8)
    ("llama-3-8b", 1, 1, 128, 128, 28312, "cal"),
    ("llama-3-8b", 1, 1, 128, 2048, 22714, "val"),
    ("llama-3-8b", 1, 1, 128, 4096, 14325, "cal"),
    ("llama-3-8b", 1, 1, 500, 2000, 17660, "val"),
    ("llama-3-8b", 1, 1, 1000, 1000, 15220, "cal"),
    ("llama-3-8b", 1, 1, 1000, 2000, 13899, "val"),
    ("llama-3-8b", 1, 1, 2048, 128, 3450, "cal"),
    ("llama-3-8b", 1, 1, 2048, 2048, 9305, "val"),
    ("llama-3-8b", 1, 1, 5000, 500, 3459, "cal"),
    ("llama-3-8b", 1, 1, 20000, 2000, 1351, "val"),
    # Llama 3.3 70B, H100 TP2 (FP8)
    ("llama-3-70b", 2, 1, 128, 128, 6378, "val"),
    ("llama-3-70b", 2, 1, 128, 2048, 6651, "cal"),
    ("llama-3-70b", 2, 1, 128, 4096, 4199, "val"),
    ("llama-3-70b", 2, 1, 500, 2000, 5222, "cal"),
    ("llama-3-70b", 2, 1, 1000, 1000, 4205, "val"),
    ("llama-3-70b", 2, 1, 1000, 2000, 4146, "cal"),
    ("llama-3-70b", 2, 1, 2048, 128, 762, "val"),
    ("llama-3-70b", 2, 1, 2048, 2048, 3082, "cal"),
    ("llama-3-70b", 2, 1, 5000, 500, 898, "val"),
    ("llama-3-70b", 2, 1, 20000, 2000, 437, "cal"),
    # Llama 3.1 405B, H100 TP8 (FP8): held out
    ("llama-3-405b", 8, 1, 128, 128, 3627, "val"),
    ("llama-3-405b", 8, 1, 128, 2048, 4340, "val"),
    ("llama-3-405b", 8, 1, 128, 4096, 3116, "val"),
    ("llama-3-405b", 8, 1, 500, 2000, 3994, "val"),
    ("llama-3-405b", 8, 1, 1000, 1000, 2919, "val"),
    ("llama-3-405b", 8, 1, 1000, 2000, 2895, "val"),
    ("llama-3-405b", 8, 1, 2048, 128, 453, "val"),
    ("llama-3-405b", 8, 1, 2048, 2048, 2296, "val"),
    ("llama-3-405b", 8, 1, 5000, 500, 610, "val"),
    ("llama-3-405b", 8, 1, 20000, 2000, 345, "val"),
    # Qwen3-235B-A22B (MoE), H100 TP8 (FP8), experts over the 8 GPUs: held out
    ("qwen3-235b-a22b", 8, 8, 128, 2048, 19658, "val"),
    ("qwen3-235b-a22b", 8, 8, 128, 4096, 12447, "val"),
    ("qwen3-235b-a22b", 8, 8, 500, 2000, 18351, "val"),
    ("qwen3-235b-a22b", 8, 8, 1000, 1000, 14898, "val"),
    ("qwen3-235b-a22b", 8, 8, 1000, 2000, 15136, "val"),
    ("qwen3-235b-a22b", 8, 8, 2048, 2048, 9924, "val"),
    ("qwen3-235b-a22b", 8, 8, 5000, 500, 3225, "val"),
)
CALIBRATION = tuple(r for r in TRTLLM_H100 if r[6] == "cal")
HELD_OUT = tuple(r for r in TRTLLM_H100 if r[6] == "val")

CLOUDMATRIX_SOURCE = "Zuo et al., Serving LLMs on Huawei CloudMatrix384, arXiv:2506.12708"
DEEPSEEK_SERVING_SOURCE = "DeepSeek, V3/R1 Inference System Overview (open-infra-index, 2025-03-01)"
SGLANG_SOURCE = "LMSYS, SGLang large-scale EP on 96 H100 (lmsys.org/blog/2025-05-05-large-scale-ep)"
MEGATRON_SOURCE = (
    "Megatron-Bridge performance-summary.md (NeMo 25.09), DGX-H100, DeepSeekV3 1,024 GPUs "
    "TP2 PP8 VP4 EP64"
)
MEGATRON_DSV3_H100_TOKENS_PER_GPU = 1297.0
DEEPSEEK_TRAINING_SOURCE = "DeepSeek-V3 Technical Report, arXiv:2412.19437, Table 1 / sec. 3.2"

# MTP: DeepSeek-V3 report (its MTP discussion): the second token is accepted 85-90 % of the
# time, "1.8x TPS"; a speculative step verifies 2 tokens per sequence and keeps 1.8.
MTP_TOKENS_PER_STEP = 1.8

# CloudMatrix-Infer per-operator figures (Zuo et al., arXiv:2506.12708, operator evaluation and
# decode ablations; DeepSeek-R1 INT8 on 910C, EP320 decode at batch 96 per NPU, 4K KV):
# a decode layer takes 874 us without MTP and 1,260 us with it; the two-micro-batch pipeline
# raises decode throughput by 5.8 / 9.4 / 6.9 % at batch 64 / 96 / 128; MLA runs at 65.4 % of
# compute (compute-bound) / 84.1 % of HBM bandwidth (memory-bound); INT8 GEMMs at 77.4-82.7 %
# of peak; dispatch 116 us (EP8) / 152 us (EP256, 54 GB/s per rank), combine 118 us (EP8,
# 131 GB/s per rank) for 128 tokens per rank. The dispatch / combine figures set
# ``perf.fabric`` for 910C; the rest are printed by ``validate`` as checks (not fitted).
CLOUDMATRIX_LAYER_US = {"no_mtp": 874.0, "mtp": 1260.0}
CLOUDMATRIX_MICROBATCH_GAIN = {64: 0.058, 96: 0.094, 128: 0.069}
CLOUDMATRIX_A2A_US = {("dispatch", 8): 116.0, ("dispatch", 256): 152.0, ("combine", 8): 118.0}
