"""Day-0 model adaptation: build a :class:`ModelSpec` from a Hugging Face ``config.json``.

``model_from_hf_config(cfg, model_id=...)`` is a pure function (the Django admin can call it);
``python -m simulation.engine model add config.json`` stores the result in the user catalog, a
JSON file at ``$CLUSTER_PORTAL_MODEL_CATALOG`` (default ``./var/model_catalog.json``), which
``catalog`` loads at import so ``perf``, ``compare`` and scenarios can use the model at once.

Fields read (Hugging Face names; aliases in brackets): ``num_hidden_layers`` [n_layer,
num_layers], ``hidden_size`` [n_embd, d_model], ``num_attention_heads`` [n_head],
``num_key_value_heads`` (default = heads: MHA), ``head_dim`` (default hidden / heads),
``intermediate_size`` [ffn_hidden_size], ``vocab_size``, ``n_routed_experts`` [num_experts,
num_local_experts], ``num_experts_per_tok`` [moe_topk], ``n_shared_experts``,
``moe_intermediate_size``, ``first_k_dense_replace``, ``kv_lora_rank``, ``qk_rope_head_dim``,
``q_lora_rank``, ``torch_dtype``, ``tie_word_embeddings``, ``num_nextn_predict_layers`` (MTP).
The parameter count is computed from the shapes (embeddings + attention + dense/MoE FFN).
Any missing or non-positive required field raises ``ValueError`` naming the field.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from .catalog import MODELS, ModelSpec

ENV_VAR = "CLUSTER_PORTAL_MODEL_CATALOG"
_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


def user_catalog_path() -> Path:
    """Path of the user model catalog (env var, else ``./var/model_catalog.json``)."""
    return Path(os.environ.get(ENV_VAR) or Path.cwd() / "var" / "model_catalog.json")


def _get(cfg: dict, names: tuple[str, ...], *, required: bool, default: Any = None) -> Any:
    for n in names:
        if n in cfg and cfg[n] is not None:
            v = cfg[n]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v) or v <= 0:
                raise ValueError(f"config.json: field {n!r} must be a positive integer (got {v!r})")
            return int(v)
    if required:
        raise ValueError(f"config.json: required field {names[0]!r} is missing")
    return default


def model_from_hf_config(cfg: dict, *, model_id: str, name: str | None = None) -> ModelSpec:
    """Map a Hugging Face ``config.json`` dict to a :class:`ModelSpec` (pure; validates)."""
    if not isinstance(cfg, dict):
        raise ValueError("config.json: expected a JSON object")
    if not isinstance(model_id, str) or not _ID.match(model_id):
        raise ValueError(
            f"model_id: must be lowercase letters, digits, '.', '_' or '-' (got {model_id!r})"
        )
    if "text_config" in cfg and "num_hidden_layers" not in cfg:
        cfg = cfg["text_config"]  # multimodal wrappers keep the LLM shape here
    layers = _get(cfg, ("num_hidden_layers", "n_layer", "num_layers"), required=True)
    hidden = _get(cfg, ("hidden_size", "n_embd", "d_model"), required=True)
    heads = _get(cfg, ("num_attention_heads", "n_head"), required=True)
    kv_heads = _get(cfg, ("num_key_value_heads",), required=False, default=heads)
    if kv_heads > heads or heads % kv_heads:
        raise ValueError(
            f"config.json: field 'num_key_value_heads' ({kv_heads}) must divide "
            f"num_attention_heads ({heads})"
        )
    head_dim = _get(cfg, ("head_dim",), required=False, default=hidden // heads)
    inter = _get(cfg, ("intermediate_size", "ffn_hidden_size"), required=False)
    vocab = _get(cfg, ("vocab_size",), required=True)
    experts = _get(
        cfg, ("n_routed_experts", "num_experts", "num_local_experts"), required=False, default=0
    )
    topk = _get(cfg, ("num_experts_per_tok", "moe_topk"), required=False, default=0)
    shared = _get(cfg, ("n_shared_experts",), required=False, default=0)
    moe_inter = _get(cfg, ("moe_intermediate_size",), required=False, default=0)
    kv_lora = _get(cfg, ("kv_lora_rank",), required=False, default=0)
    rope = _get(cfg, ("qk_rope_head_dim",), required=False, default=0)
    q_lora = _get(cfg, ("q_lora_rank",), required=False, default=0)
    ctx = _get(
        cfg, ("max_position_embeddings", "seq_length", "n_positions"), required=False, default=0
    )
    mtp = cfg.get("num_nextn_predict_layers", 0)
    if not isinstance(mtp, int) or isinstance(mtp, bool) or mtp < 0:
        raise ValueError("config.json: field 'num_nextn_predict_layers' must be an int >= 0")
    first_dense = cfg.get("first_k_dense_replace", 0)
    if not isinstance(first_dense, int) or isinstance(first_dense, bool) or first_dense < 0:
        raise ValueError("config.json: field 'first_k_dense_replace' must be an int >= 0")
    if experts:
        if not topk:
            raise ValueError("config.json: field 'num_experts_per_tok' is required for MoE")
        if topk > experts:
            raise ValueError("config.json: field 'num_experts_per_tok' exceeds the expert count")
        moe_inter = moe_inter or inter
        if not moe_inter:
            raise ValueError("config.json: field 'moe_intermediate_size' is required for MoE")
    moe_layers = max(layers - first_dense, 0) if experts else 0
    dense_layers = layers - moe_layers
    if dense_layers and not inter:
        raise ValueError("config.json: field 'intermediate_size' is missing")
    # Attention parameters per layer.
    if kv_lora:
        nope = _get(cfg, ("qk_nope_head_dim",), required=False, default=head_dim)
        v_dim = _get(cfg, ("v_head_dim",), required=False, default=head_dim)
        qk = nope + rope
        q = hidden * q_lora + q_lora * heads * qk if q_lora else hidden * heads * qk
        kv = hidden * (kv_lora + rope) + kv_lora * heads * (nope + v_dim)
        attn = q + kv + heads * v_dim * hidden
        attention = "mla"
    else:
        attn = hidden * heads * head_dim * 2 + 2 * hidden * kv_heads * head_dim
        attention = "mha" if kv_heads == heads else "gqa"
    ffn_dense = 3 * hidden * (inter or 0)
    expert = 3 * hidden * moe_inter
    tied = bool(cfg.get("tie_word_embeddings", False))
    embed = vocab * hidden * (1 if tied else 2)
    params = (
        embed
        + layers * attn
        + dense_layers * ffn_dense
        + moe_layers * (experts + shared) * expert
        + moe_layers * hidden * experts  # router
    )
    active = params - moe_layers * (experts - topk) * expert if experts else 0.0
    return ModelSpec(
        id=model_id,
        name=name or str(cfg.get("_name_or_path") or model_id),
        params=float(params),
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        bytes_per_param=2,  # catalog precision is bf16/fp16; ``perf --dtype`` changes it
        active_params=float(active),
        n_experts=experts,
        experts_per_token=topk,
        n_shared_experts=shared,
        moe_intermediate=moe_inter if experts else 0,
        moe_layers=moe_layers,
        attention=attention,
        kv_lora_rank=kv_lora,
        qk_rope_head_dim=rope,
        vocab=vocab,
        source="user config.json",
        max_context=ctx,
        mtp_layers=mtp,
    )


def load_user_catalog(path: Path | None = None) -> list[ModelSpec]:
    """Models stored by ``model add`` (empty when the file does not exist)."""
    p = path or user_catalog_path()
    if not p.is_file():
        return []
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return []  # a damaged user file must not break the engine import; `model add` rewrites
    out = []
    for d in data.get("models", []) if isinstance(data, dict) else []:
        try:
            out.append(ModelSpec(**d))
        except TypeError:
            continue
    return out


def register_user_models() -> None:
    """Add operator-imported models (``model add``) from the user catalog file to
    :data:`.catalog.MODELS` (built-ins win); the package calls this once at import."""
    for m in load_user_catalog():
        MODELS.setdefault(m.id, m)


def add_user_model(spec: ModelSpec, path: Path | None = None) -> Path:
    """Store ``spec`` in the user catalog (replacing an entry with the same id)."""
    from . import catalog

    p = path or user_catalog_path()
    if spec.id in catalog.MODELS and catalog.MODELS[spec.id].source != "user config.json":
        raise ValueError(f"model_id: {spec.id!r} is a built-in catalog model; choose another id")
    models = [m for m in load_user_catalog(p) if m.id != spec.id] + [spec]
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".tmp")
    tmp.write_text(
        json.dumps({"models": [m.to_dict() for m in models]}, indent=2, sort_keys=True) + "\n",
        encoding="utf-8",
    )
    tmp.replace(p)
    catalog.MODELS[spec.id] = spec
    return p
