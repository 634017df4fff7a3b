"""Hardware and model catalogs for the digital twin.

Figures come from DESIGN.md section 4. Every hardware entry carries a ``confidence`` field
because several Ascend figures are press or roadmap numbers; where DESIGN.md says "n/a" we pick
a documented assumption and mark it ``low``. Capacities written "80 GB" are treated as GiB
(2**30 bytes), which is what device tools report for these parts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

GIB = 2**30
TB = 1e12
TFLOPS = 1e12


@dataclass(frozen=True)
class HardwareSpec:
    """One accelerator model: memory, bandwidth, dense FP16/BF16 compute and power."""

    id: str
    name: str
    hbm_bytes: int
    hbm_bandwidth_bytes_per_s: float
    peak_flops: float
    tdp_watts: float
    idle_watts: float
    confidence: str
    notes: str = ""

    def to_dict(self) -> dict:
        """Plain-data form (JSON friendly)."""
        return asdict(self)


@dataclass(frozen=True)
class ModelSpec:
    """A dense transformer: parameter count and attention shape (for KV-cache sizing)."""

    id: str
    name: str
    params: float
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    bytes_per_param: int = 2
    # Serving-model extensions (issue 13): MoE shape, attention type, provenance. Defaults keep
    # the dense entries above unchanged; see ``models_hf.py`` for the Hugging Face mapping
    # (operator-imported models are added to MODELS when the package is imported).
    active_params: float = 0.0  # parameters used per token (0 = all: dense)
    n_experts: int = 0  # routed experts per MoE layer
    experts_per_token: int = 0
    n_shared_experts: int = 0
    moe_intermediate: int = 0
    moe_layers: int = 0
    attention: str = ""  # "mha" | "gqa" | "mla" ("" = from kv_heads vs heads)
    kv_lora_rank: int = 0  # MLA latent width
    qk_rope_head_dim: int = 0  # MLA decoupled RoPE key width
    vocab: int = 0
    source: str = ""
    # Context window in tokens (``max_position_embeddings`` of the published config; 0 =
    # unknown: no limit enforced). Prompts beyond it are truncated and counted (issue 25).
    max_context: int = 0
    # Multi-token-prediction modules shipped with the weights (``num_nextn_predict_layers``:
    # DeepSeek-V3/R1 1); a stack with MTP (``ServingParams.mtp_acceptance``) decodes with them.
    mtp_layers: int = 0

    @property
    def weight_bytes(self) -> float:
        """Bytes of the weights at the catalog precision (fp16/bf16: 2 per parameter)."""
        return self.params * self.bytes_per_param

    @property
    def attention_type(self) -> str:
        """``mla``, ``gqa`` or ``mha``."""
        if self.attention:
            return self.attention
        return "mha" if self.kv_heads == self.heads else "gqa"

    @property
    def kv_bytes_per_token(self) -> int:
        """KV bytes per token (bf16/fp16 cache, 2 bytes/element).

        MHA/GQA: 2 (K and V) x layers x KV heads x head dim x 2. MLA caches one latent vector plus
        the decoupled RoPE key per layer: layers x (kv_lora_rank + qk_rope_head_dim) x 2.
        """
        if self.attention_type == "mla":
            return self.layers * (self.kv_lora_rank + self.qk_rope_head_dim) * 2
        return 2 * self.layers * self.kv_heads * self.head_dim * self.bytes_per_param

    @property
    def active(self) -> float:
        """Parameters touched per token (total for dense models)."""
        return self.active_params or self.params

    @property
    def routed_expert_params(self) -> float:
        """Parameters of all routed experts (SwiGLU: 3 x hidden x moe_intermediate each)."""
        return float(self.moe_layers * self.n_experts * 3 * self.hidden * self.moe_intermediate)

    @property
    def attention_width(self) -> int:
        """Query width heads x head_dim, used for attention FLOPs."""
        return self.heads * self.head_dim

    def to_dict(self) -> dict:
        """Plain-data form (JSON friendly)."""
        return asdict(self)


# Idle power is not published for any of these parts; we assume 25% of TDP (typical of
# measured H100/A100 idle draw with HBM refresh and fabric links up) and say so here.
_IDLE_FRACTION = 0.25

HARDWARE: dict[str, HardwareSpec] = {
    h.id: h
    for h in (
        HardwareSpec(
            "h100-sxm",
            "NVIDIA H100 SXM5",
            80 * GIB,
            3.35 * TB,
            989 * TFLOPS,
            700.0,
            700.0 * _IDLE_FRACTION,
            "high",
            "datasheet",
        ),
        HardwareSpec(
            "a100-sxm",
            "NVIDIA A100 80GB SXM",
            80 * GIB,
            2.0 * TB,
            312 * TFLOPS,
            400.0,
            400.0 * _IDLE_FRACTION,
            "high",
            "datasheet",
        ),
        HardwareSpec(
            "ascend-910b",
            "Huawei Ascend 910B",
            64 * GIB,
            1.6 * TB,
            320 * TFLOPS,
            400.0,
            400.0 * _IDLE_FRACTION,
            "low",
            "press figures disagree",
        ),
        # 910C TDP is not published: assumed ~2x a 910B die pair minus shared I/O = 750 W.
        HardwareSpec(
            "ascend-910c",
            "Huawei Ascend 910C",
            128 * GIB,
            3.2 * TB,
            752 * TFLOPS,
            750.0,
            750.0 * _IDLE_FRACTION,
            "medium",
            "TDP n/a: 750 W assumed (confidence low)",
        ),
        # 950 figures are roadmap FP8; dense BF16 assumed at half the FP8 rate (usual ratio).
        HardwareSpec(
            "ascend-950pr",
            "Huawei Ascend 950PR",
            128 * GIB,
            1.6 * TB,
            500 * TFLOPS,
            600.0,
            600.0 * _IDLE_FRACTION,
            "medium",
            "roadmap: 1 PFLOPS FP8, BF16 assumed 500 TFLOPS; TDP n/a: 600 W assumed (low)",
        ),
        HardwareSpec(
            "ascend-950dt",
            "Huawei Ascend 950DT",
            144 * GIB,
            4.0 * TB,
            500 * TFLOPS,
            800.0,
            800.0 * _IDLE_FRACTION,
            "medium",
            "roadmap: 1 PFLOPS FP8, BF16 assumed 500 TFLOPS; TDP n/a: 800 W assumed (low)",
        ),
    )
}

MODELS: dict[str, ModelSpec] = {
    m.id: m
    for m in (
        ModelSpec("llama-2-70b", "Llama-2-70B", 70e9, 80, 8192, 64, 8, 128),
        ModelSpec("bloom-176b", "BLOOM-176B", 176e9, 70, 14336, 112, 112, 128),
        ModelSpec("gpt-3-175b", "GPT-3 175B", 175e9, 96, 12288, 96, 96, 128),
        ModelSpec("llama-3-8b", "Llama-3-8B", 8e9, 32, 4096, 32, 8, 128),
    )
}


# --- Training-scale models (issue 14): shapes from the published configs -----------------
# Llama 3 405B / 70B: Dubey et al., "The Llama 3 Herd of Models" (2024), Table 3 (layers,
# model dimension, FFN 53,248 / 28,672, 128 / 64 attention heads, 8 KV heads, vocab 128,256)
# and the Hugging Face config.json of Meta-Llama-3.1-405B / Meta-Llama-3-70B (head_dim 128).
# --- MoE / trillion-parameter models (issue 13). Shapes from the published Hugging Face
# config.json of each model (see README "Sources"); parameter totals from the model cards.
MODELS.update(
    {
        m.id: m
        for m in (
            ModelSpec("llama-3-405b", "Llama-3-405B", 405e9, 126, 16384, 128, 8, 128),
            ModelSpec("llama-3-70b", "Llama-3-70B", 70.6e9, 80, 8192, 64, 8, 128),
            ModelSpec(
                "deepseek-r1",
                "DeepSeek-R1 (V3 architecture)",
                671e9,
                61,
                7168,
                128,
                128,
                128,
                active_params=37e9,
                n_experts=256,
                experts_per_token=8,
                n_shared_experts=1,
                moe_intermediate=2048,
                moe_layers=58,
                attention="mla",
                kv_lora_rank=512,
                qk_rope_head_dim=64,
                vocab=129280,
                source="huggingface.co/deepseek-ai/DeepSeek-R1/blob/main/config.json",
                mtp_layers=1,  # num_nextn_predict_layers
            ),
            ModelSpec(
                "qwen3-235b-a22b",
                "Qwen3-235B-A22B",
                235e9,
                94,
                4096,
                64,
                4,
                128,
                active_params=22e9,
                n_experts=128,
                experts_per_token=8,
                n_shared_experts=0,
                moe_intermediate=1536,
                moe_layers=94,
                attention="gqa",
                vocab=151936,
                source="huggingface.co/Qwen/Qwen3-235B-A22B/blob/main/config.json",
            ),
            ModelSpec(
                "kimi-k2",
                "Kimi-K2",
                1.04e12,
                61,
                7168,
                64,
                64,
                128,
                active_params=32e9,
                n_experts=384,
                experts_per_token=8,
                n_shared_experts=1,
                moe_intermediate=2048,
                moe_layers=60,
                attention="mla",
                kv_lora_rank=512,
                qk_rope_head_dim=64,
                vocab=163840,
                source="huggingface.co/moonshotai/Kimi-K2-Instruct/blob/main/config.json",
            ),
        )
    }
)


# Context windows (``max_position_embeddings`` / trained sequence length of each published
# config: Llama 2 4k, Llama 3 8k, Llama 3.1 405B 128k, GPT-3 and BLOOM 2k, DeepSeek-V3/R1 160k,
# Qwen3-235B-A22B 40k, Kimi-K2 128k).
_CONTEXT = {
    "llama-2-70b": 4096,
    "bloom-176b": 2048,
    "gpt-3-175b": 2048,
    "llama-3-8b": 8192,
    "llama-3-405b": 131072,
    "llama-3-70b": 8192,
    "deepseek-r1": 163840,
    "qwen3-235b-a22b": 40960,
    "kimi-k2": 131072,
}
for _id, _ctx in _CONTEXT.items():
    MODELS[_id] = replace(MODELS[_id], max_context=_ctx)


def get_hardware(hardware_id: str) -> HardwareSpec:
    """Look up a hardware entry; ``ValueError`` names the unknown id and the valid ones."""
    try:
        return HARDWARE[hardware_id]
    except KeyError:
        raise ValueError(
            f"hardware: unknown id {hardware_id!r}; expected one of {sorted(HARDWARE)}"
        ) from None


def get_model(model_id: str) -> ModelSpec:
    """Look up a model entry; ``ValueError`` names the unknown id and the valid ones."""
    try:
        return MODELS[model_id]
    except KeyError:
        raise ValueError(
            f"model: unknown id {model_id!r}; expected one of {sorted(MODELS)}"
        ) from None


def min_tensor_parallel(model: ModelSpec, hw: HardwareSpec, weight_fraction: float = 0.7) -> int:
    """Smallest power-of-two TP degree whose per-card weight share fits ``weight_fraction`` of HBM.

    The remaining HBM is left for KV cache and activations, as serving stacks do.
    """
    tp = 1
    while model.weight_bytes / tp > weight_fraction * hw.hbm_bytes and tp < 64:
        tp *= 2
    return tp
