"""Published small-batch latencies (one request at a time) of current serving stacks (data only;
see ``validate_small_batch``).

**NVIDIA NIM for LLMs, benchmarking guide 1.0.0, "Performance"**
(https://docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance): Llama-3.3-70B-Instruct,
NIM container 1.8.0, 2 x H100 80G, FP8, TP2, AIPerf at concurrency 1: mean TTFT and ITL (ms).
The 5,000 / 500 row is fitted (with the TensorRT-LLM throughput rows, ``trtllm-2025``); the
500 / 2,000 row is held out. Llama 3.3 70B has the catalog's ``llama-3-70b`` shape.

**NVIDIA NIM, Llama 3.1 Nemotron Safety Guard Multilingual 8B V1, 1.10.1, "Performance"**
(https://docs.nvidia.com/nim/llama-3-1-nemotron-safety-guard-8b/1.10.1/performance): NVIDIA
A100 80GB SXM, BF16, genai-perf, tab 500_10 (500 input / 10 output tokens), concurrency 1:
TTFT 48.3 ms. The model is a Llama-3.1-8B fine-tune (the catalog's ``llama-3-8b`` shape).
Held out: the A100 profile is fitted on Splitwise's A100 rows, not on this figure.

Rows ``(model, hardware, tp, dtype, isl, osl, ttft_ms, itl_ms or None, role)``.
"""

from __future__ import annotations

NIM_SOURCE = "NVIDIA NIM benchmarking 1.0.0 Performance (Llama-3.3-70B, NIM 1.8.0, 2 x H100, FP8)"
NIM_A100_SOURCE = "NVIDIA NIM Safety Guard 8B 1.10.1 Performance (A100 80GB SXM, BF16, 500_10)"

NIM_H100: tuple[tuple, ...] = (
    ("llama-3-70b", "h100-sxm", 2, "fp8", 5000, 500, 406.77, 18.58, "cal"),
    ("llama-3-70b", "h100-sxm", 2, "fp8", 500, 2000, 47.77, 18.91, "val"),
)
NIM_A100: tuple[tuple, ...] = (("llama-3-8b", "a100-sxm", 1, "bf16", 500, 10, 48.3, None, "val"),)
ROWS = NIM_H100 + NIM_A100
