"""Serving-stack profiles (issue 25 part 2): no efficiency collapse, batching up to the roofline,
MoE all-to-all overlap, selectable profiles, and the current-stack checks of ``validate``."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import numpy as np
import pytest

from simulation.engine import validate_current
from simulation.engine.catalog import get_hardware, get_model
from simulation.engine.perf import profiles
from simulation.engine.perf.inference import (
    decode_breakdown,
    decode_seconds_per_token,
    perf_point,
    prefill_breakdown,
    prefill_seconds,
)
from simulation.engine.perf.train_model import Fabric, shape_of, step_time

H100 = get_hardware("h100-sxm")
C910 = get_hardware("ascend-910c")
L70 = get_model("llama-3-70b")
DS = get_model("deepseek-r1")
ALL = sorted(profiles.PROFILES)


def _achieved_fraction(profile: str, tokens: float, batch: float) -> float:
    """Model + attention FLOPs of a prefill over the 8 cards' peak x its wall time."""
    t = float(prefill_seconds(L70, H100, 8, tokens, batch, profile=profile))
    attn = batch * 2.0 * L70.layers * tokens**2 * L70.attention_width
    return (2.0 * L70.params * tokens * batch + attn) / (t * 8 * H100.peak_flops)


@pytest.mark.parametrize("profile", ["splitwise-2023", "trtllm-2025"])  # H100 stacks
def test_a_large_prefill_reaches_a_sane_fraction_of_peak_and_never_collapses(profile):
    mid = _achieved_fraction(profile, 4096, 1)
    for tokens, batch in ((2048, 64), (131072, 1), (8192, 128)):
        big = _achieved_fraction(profile, tokens, batch)
        assert big >= 0.2, (tokens, batch, big)  # was 0.17 % with the collapse term
        if batch > 1:  # batched prompts, GEMM-dominated: more work is never less efficient
            assert big >= 0.95 * mid, (tokens, batch, big, mid)
    # Attention-bound: trtllm-2025's attention runs at 55 % of peak since its refit with NIM's
    # single-request row (issue 35; it sat at FlashAttention-3's 75 % bound before).
    assert _achieved_fraction("trtllm-2025", 131072, 1) >= 0.45


@pytest.mark.parametrize("profile", ALL)
def test_decode_throughput_rises_with_batch_and_its_gemms_approach_the_roofline(profile):
    p = profiles.PROFILES[profile].params
    batch = np.array([1, 2, 4, 16, 64, 256, 1024, 4096, 8192], dtype=float)
    tps = batch / decode_seconds_per_token(L70, H100, 8, batch, 1024, profile=profile)
    assert (np.diff(tps) > 0).all()
    # A one-token context isolates the GEMMs: at a large batch they run near the profile's
    # ceiling (the fraction of peak its stack sustains), never above peak.
    d = decode_breakdown(L70, H100, 8, batch, 1.0, p=p)
    gemm_s = d["total"] - d["overhead"] - d["communication"]
    roofline = 2.0 * L70.params * batch / (8 * H100.peak_flops)
    assert (roofline < gemm_s).all()
    assert roofline[-1] / gemm_s[-1] >= 0.9 * p.gemm_eff_max


def test_moe_all_to_all_overlap_shortens_decode_prefill_and_training_steps():
    kw = dict(ep=320, dtype="int8", profile="cloudmatrix-2025")
    on = decode_breakdown(DS, C910, 1, 96 * 320, 4096, overlap=True, **kw)
    off = decode_breakdown(DS, C910, 1, 96 * 320, 4096, overlap=False, **kw)
    assert on["total"] < off["total"]
    assert on["communication"] < off["communication"]
    # Exposed = max(0, comm - compute): never below the serialised step minus its comm.
    assert on["total"] >= off["total"] - off["communication"] - 1e-12
    pre_on = prefill_breakdown(DS, H100, 1, 4096, 32, ep=32, dtype="fp8", overlap=True)
    pre_off = prefill_breakdown(DS, H100, 1, 4096, 32, ep=32, dtype="fp8", overlap=False)
    assert pre_on["total"] < pre_off["total"]
    h800 = validate_current.H800
    args = (shape_of(DS, 0.0), h800, 2048, 1, 16)
    kw = dict(ep=64, seq_len=4096, global_batch_tokens=15360 * 4096, gemm_dtype="fp8")
    kw["fabric"] = Fabric(8, 8, 2048, 200e9, 50e9, 1.0, 1.0, 1.0)
    a = step_time(*args, ep_overlap=True, **kw)
    b = step_time(*args, ep_overlap=False, **kw)
    assert a["mfu"] > b["mfu"] and a["comm_share"] < b["comm_share"]


def test_the_expert_all_to_all_takes_what_deepeps_published_kernels_take():
    from simulation.engine.perf.fabric import fabric
    from simulation.engine.perf.inference import alltoall_seconds

    fab = fabric(validate_current.H800)
    per_token = 8 * 7168  # top-8 experts, hidden 7168 (DeepEP's low-latency benchmark)
    for ep, dispatch_us, combine_us in ((64, 173, 314), (128, 192, 369), (256, 194, 360)):
        d = float(alltoall_seconds(128 * per_token * 1.0, ep, fab, fab.allreduce_hop_s))
        c = float(alltoall_seconds(128 * per_token * 2.0, ep, fab, fab.allreduce_hop_s))
        assert d * 1e6 == pytest.approx(dispatch_us, rel=0.2), ep
        assert c * 1e6 == pytest.approx(combine_us, rel=0.2), ep


def test_mla_decode_attention_never_runs_faster_than_flashmla():
    from simulation.engine.perf.inference import MLA_DECODE_EFF

    # A stack whose attention kernels would run faster than FlashMLA (FlashAttention-3's 75 %).
    p = dataclasses.replace(profiles.PROFILES["trtllm-2025"].params, attn_eff=0.75)
    batch, ctx = 64.0, 32768.0  # long contexts: attention-bound
    d = decode_breakdown(DS, H100, 1, batch, ctx, ep=1, dtype="fp8", p=p)
    flops = batch * 2 * DS.heads * (2 * DS.kv_lora_rank + DS.qk_rope_head_dim) * ctx * DS.layers
    assert MLA_DECODE_EFF < p.attn_eff
    assert flops / float(d["compute"]) <= MLA_DECODE_EFF * H100.peak_flops * 1.0001


def test_the_profile_is_selectable_and_the_default_is_the_current_stack():
    assert profiles.profile_name_for("h100-sxm") == "trtllm-2025"
    assert profiles.profile_name_for("ascend-910c") == "cloudmatrix-2025"
    new = perf_point("llama-2-70b", "h100-sxm", 8, 1, 2048)
    old = perf_point("llama-2-70b", "h100-sxm", 8, 1, 2048, profile="splitwise-2023")
    assert new["profile"] == "trtllm-2025" and old["profile"] == "splitwise-2023"
    assert new["decode_ms_per_token"] < old["decode_ms_per_token"]  # leaner 2025 stack
    with pytest.raises(ValueError, match="profile: must be one of current, splitwise-2023"):
        perf_point("llama-2-70b", "h100-sxm", 8, 1, 2048, profile="vllm-1999")
    r = subprocess.run(
        [sys.executable, "-m", "simulation.engine", "perf", "--model", "llama-2-70b"]
        + ["--hardware", "h100-sxm", "--profile", "splitwise-2023", "--json", "-"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["calibration"]["pass_overhead_s"] == pytest.approx(
        profiles.SPLITWISE_2023.pass_overhead_s
    )


def test_the_2023_profile_still_loads_and_reproduces_the_design_point():
    p = profiles.params_for("a100-sxm", "splitwise-2023")
    assert p is profiles.SPLITWISE_2023 and not p.moe_overlap
    point = perf_point("llama-2-70b", "h100-sxm", 8, 1, 2048, profile="splitwise-2023")
    assert point["prefill_ms"] == pytest.approx(137, rel=0.15)
    assert point["decode_ms_per_token"] == pytest.approx(30, rel=0.15)


def test_current_stack_checks_hold_on_held_out_figures_and_are_deterministic():
    lines: list[str] = []
    res = validate_current.run(lines.append)
    assert res["val"]["median_abs_log"] <= 0.15  # held-out TensorRT-LLM rows
    assert res["cal"]["median_abs_log"] <= 0.10
    moe = {c["name"]: c for c in res["moe"]}
    assert len(moe) == 7 and all(c["source"] for c in moe.values())
    for c in moe.values():
        assert 0.3 < c["ratio"] < 2.5, c  # every MoE figure within a factor of 2.5
    # The overlap efficiency is fitted on Megatron-Core's H100 run; DeepSeek's is held out.
    fitted = next(c for c in res["moe"] if "Megatron" in c["name"])
    assert fitted["ratio"] == pytest.approx(1.0, abs=0.01)
    train = next(c for c in res["moe"] if "pre-training" in c["name"])
    assert train["role"] == "held out" and 0.7 < train["ratio"] < 1.3
    # The held-out MoE serving checks on NVIDIA stacks (DeepSeek H800, SGLang H100) sit within
    # 30% with the overlap efficiency carried over from training, nothing fitted to them.
    nvidia = [c for c in res["moe"] if c["role"] == "held out" and "910C" not in c["name"]]
    assert len(nvidia) == 3 and all(0.7 < c["ratio"] < 1.3 for c in nvidia), nvidia
    assert any("held out" in line for line in lines)
    again = validate_current.run(lambda _line: None)
    assert json.dumps(res, sort_keys=True) == json.dumps(again, sort_keys=True)


def test_a_scenario_selects_its_profile_and_old_scenarios_load_with_the_current_one():
    import dataclasses

    from simulation.engine import Engine, Scenario, default_scenario

    # Loaded services (the legacy inference mix): a fleet's near-idle replicas decode at batch 1,
    # where per-pass overheads, not the stack's GEMM efficiency, set the time per token.
    scen = default_scenario(
        256, seed=2, n_services=3, training_demand="legacy", inference_demand="legacy"
    )
    assert scen.perf_profile == "current"
    old_json = scen.to_dict()
    del old_json["perf_profile"]  # a scenario saved before profiles existed
    assert Scenario.from_dict(old_json).perf_profile == "current"
    tpot = {}
    for name in ("current", "splitwise-2023"):
        s = dataclasses.replace(scen, perf_profile=name)
        assert Scenario.from_dict(s.to_dict()) == s
        eng = Engine(s)
        eng.run_until(1800.0)
        assert eng.world.svc.profile == name
        tpot[name] = eng.summary()["tpot_p50_ms"]
    assert tpot["current"] < tpot["splitwise-2023"]  # the leaner stack decodes faster
    with pytest.raises(ValueError, match="perf_profile"):
        Scenario.from_dict({**scen.to_dict(), "perf_profile": "vllm-1999"})
