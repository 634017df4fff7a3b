"""Serving latency model (issue 13): mechanisms, calibration error, MoE, precision, HF import."""

from __future__ import annotations

import numpy as np
import pytest

from simulation.engine import validate
from simulation.engine.catalog import get_hardware, get_model
from simulation.engine.models_hf import model_from_hf_config
from simulation.engine.perf.inference import (
    decode_seconds_per_token,
    perf_point,
    prefill_breakdown,
    prefill_seconds,
)

H100 = get_hardware("h100-sxm")
L70 = get_model("llama-2-70b")


def test_decode_grows_with_batch_through_kv_and_per_sequence_costs():
    # Splitwise measured 29.8 -> 50.2 ms from batch 1 to 64 on this layout (2023 stack).
    t = decode_seconds_per_token(
        L70, H100, 8, np.array([1, 16, 64]), 600.0, profile="splitwise-2023"
    )
    assert t[0] < t[1] < t[2]
    assert t[2] / t[0] > 1.4


def test_decode_kv_read_grows_with_context():
    bloom = get_model("bloom-176b")
    short = float(decode_seconds_per_token(bloom, H100, 8, 32, 512))
    long = float(decode_seconds_per_token(bloom, H100, 8, 32, 8192))
    assert long > 1.2 * short


def test_short_prompts_pay_a_fixed_cost_and_long_prompts_scale_with_tokens():
    b = prefill_breakdown(L70, H100, 8, 128, profile="splitwise-2023")
    assert b["overhead"] > b["compute"]  # the 2023 stack's ~10 ms per pass
    t = prefill_seconds(
        L70, H100, 8, np.array([128.0, 256.0, 2048.0, 4096.0, 8192.0]), profile="splitwise-2023"
    )
    assert t[1] < 1.5 * t[0]  # fixed cost dominates short prompts
    assert t[4] > 3.5 * t[2]  # long prompts: compute-bound, about linear in tokens


def test_calibration_error_targets_hold_on_both_halves():
    for rows in (validate.splitwise.CALIBRATION_ROWS, validate.splitwise.VALIDATION_ROWS):
        s = validate.summary(rows)
        for phase in ("prefill", "decode"):
            d = s[phase]
            assert d["median_abs"] <= 0.15, (phase, d)
            assert 0.2 < d["share_over"] < 0.8, (phase, d)  # errors not one-sided
            for lo, hi in validate.BUCKETS:
                key = f"batch_{lo}_{hi}"
                if key in d:
                    # 0.35: without the former efficiency-collapse term the model no longer
                    # follows the 2023 stack's prefill past ~4k tokens per pass (measured at
                    # ~20 % of peak for 32k tokens; the model stays near its GEMM ceiling).
                    assert d[key] <= 0.35, (phase, key, d[key])


def test_mla_kv_bytes_follow_the_latent_width():
    ds = get_model("deepseek-r1")
    assert ds.attention_type == "mla"
    assert ds.kv_bytes_per_token == 61 * (512 + 64) * 2
    assert get_model("qwen3-235b-a22b").kv_bytes_per_token == 2 * 94 * 4 * 128 * 2
    assert L70.attention_type == "gqa" and get_model("bloom-176b").attention_type == "mha"


def test_moe_perf_reports_throughput_and_ep_beyond_a_supernode_costs_more():
    # The 2023 profile serialises the all-to-all, so its whole cost shows.
    old = "splitwise-2023"
    a = perf_point("deepseek-r1", "ascend-910c", 1, 64, 2048, ep=256, dtype="int8", profile=old)
    b = perf_point("deepseek-r1", "ascend-910c", 1, 64, 2048, ep=768, dtype="int8", profile=old)
    assert (
        b["breakdown"]["decode_ms"]["communication"] > a["breakdown"]["decode_ms"]["communication"]
    )
    p = perf_point(
        "deepseek-r1", "ascend-910c", 1, 1, 4096, ep=320, dtype="int8", tpot_target_ms=50
    )
    assert p["decode_batch_at_target"] > 0
    assert p["decode_tokens_per_s_per_card"] > 0 and p["prefill_tokens_per_s_per_card"] > 0
    assert p["tpot_ms"] == p["decode_ms_per_token"]


def test_lower_precision_weights_decode_faster():
    bf = float(decode_seconds_per_token(L70, H100, 2, 1, 1024, dtype="bf16"))
    f8 = float(decode_seconds_per_token(L70, H100, 2, 1, 1024, dtype="fp8"))
    assert f8 < bf


def test_perf_rejects_bad_layouts_with_a_named_field():
    with pytest.raises(ValueError, match="ep"):
        perf_point("llama-2-70b", "h100-sxm", 8, 1, 512, ep=16)
    with pytest.raises(ValueError, match="tp"):
        perf_point("bloom-176b", "h100-sxm", 1, 1, 512)


DSV3 = {
    "num_hidden_layers": 61,
    "hidden_size": 7168,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "num_experts_per_tok": 8,
    "first_k_dense_replace": 3,
    "kv_lora_rank": 512,
    "q_lora_rank": 1536,
    "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 128,
    "v_head_dim": 128,
    "vocab_size": 129280,
    "torch_dtype": "bfloat16",
}


def test_hf_config_import_recovers_deepseek_v3_shape():
    m = model_from_hf_config(DSV3, model_id="dsv3-import")
    assert m.params == pytest.approx(671e9, rel=0.03)
    assert m.active == pytest.approx(37e9, rel=0.05)
    assert m.kv_bytes_per_token == get_model("deepseek-r1").kv_bytes_per_token
    assert m.moe_layers == 58


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"num_hidden_layers": None}, "num_hidden_layers"),
        ({"hidden_size": -1}, "hidden_size"),
        ({"num_experts_per_tok": None}, "num_experts_per_tok"),
        ({"num_key_value_heads": 3}, "num_key_value_heads"),
        ({"vocab_size": "big"}, "vocab_size"),
    ],
)
def test_bad_configs_name_the_field(patch, field):
    cfg = {k: v for k, v in {**DSV3, **patch}.items() if v is not None}
    with pytest.raises(ValueError, match=field):
        model_from_hf_config(cfg, model_id="bad")
