"""MoE serving from one code path: MTP in ``perf``, ``validate`` and the scheduler; 910C's
expert all-to-all from CloudMatrix-Infer's per-operator figures (issue 35 item 4)."""

from __future__ import annotations

import numpy as np
import pytest

from simulation.engine import validate_current
from simulation.engine.catalog import get_hardware, get_model
from simulation.engine.models_hf import model_from_hf_config
from simulation.engine.perf.inference import (
    decode_breakdown,
    decode_seconds_per_token,
    mtp_step,
)
from simulation.engine.perf.operating import perf_point
from simulation.engine.perf.profiles import PROFILES
from simulation.engine.sched.inference import ServiceTable

from .test_perf_serving import DSV3

C910 = get_hardware("ascend-910c")
DS = get_model("deepseek-r1")


@pytest.mark.parametrize("tpot_ms", [50.0, 15.0])
def test_perf_reports_the_cloudmatrix_figure_validate_prints(tpot_ms):
    # perf's context is prompt + output / 2: 3,072 + 2,048 / 2 = validate's 4K KV length.
    point = perf_point(
        "deepseek-r1",
        "ascend-910c",
        1,
        1,
        3072,
        ep=320,
        dtype="int8",
        output_tokens=2048,
        tpot_target_ms=tpot_ms,
    )
    name = f"DeepSeek-R1 decode, 910C EP320 INT8, TPOT < {tpot_ms:g} ms"
    check = {c["name"]: c for c in validate_current.moe_serving_checks()}[name]
    assert point["decode_tokens_per_s_per_card"] > 0
    assert point["decode_tokens_per_s_per_card"] == pytest.approx(check["twin"], rel=1e-9)
    assert point["mtp_tokens_per_step"] == pytest.approx(1.8)
    assert point["tpot_ms_at_target"] <= tpot_ms


@pytest.mark.parametrize("tpot_ms", ["50", "15"])
def test_the_perf_command_prints_the_number_validate_prints(tpot_ms, tmp_path, capsys):
    # The command an operator runs, end to end (argument parsing, JSON out), not the function.
    import json

    from simulation.engine import cli

    out = tmp_path / "perf.json"
    argv = ["perf", "--model", "deepseek-r1", "--hardware", "ascend-910c", "--tp", "1"]
    argv += ["--ep", "320", "--dtype", "int8", "--prompt-tokens", "3072"]
    argv += ["--output-tokens", "2048", "--tpot-target-ms", tpot_ms, "--json", str(out)]
    assert cli.main(argv) in (0, None)
    point = json.loads(out.read_text())
    name = f"DeepSeek-R1 decode, 910C EP320 INT8, TPOT < {tpot_ms} ms"
    check = {c["name"]: c for c in validate_current.moe_serving_checks()}[name]
    assert point["decode_tokens_per_s_per_card"] == pytest.approx(check["twin"], rel=1e-9)
    assert point["decode_tokens_per_s_per_card"] > 0


def test_perf_at_validates_kv_length_gives_its_figure_whatever_the_prompt():
    # The same decode point named by its KV length instead of prompt + output / 2.
    check = {c["name"]: c for c in validate_current.moe_serving_checks()}
    for prompt, tpot_ms in ((4096, 50.0), (512, 15.0)):
        point = perf_point(
            "deepseek-r1",
            "ascend-910c",
            1,
            1,
            prompt,
            ep=320,
            dtype="int8",
            tpot_target_ms=tpot_ms,
            context_tokens=4096,
        )
        name = f"DeepSeek-R1 decode, 910C EP320 INT8, TPOT < {tpot_ms:g} ms"
        assert point["decode_context_tokens"] == 4096
        assert point["decode_tokens_per_s_per_card"] == pytest.approx(check[name]["twin"])
    with pytest.raises(ValueError, match="context_tokens"):
        perf_point("deepseek-r1", "ascend-910c", 1, 1, 4096, ep=320, context_tokens=-1)


def test_the_scheduler_decodes_an_mtp_model_with_the_step_validate_uses():
    p = PROFILES["cloudmatrix-2025"].params
    q, kept = (float(x) for x in mtp_step(DS, p))
    assert (q, kept) == (2.0, pytest.approx(1.8))
    step = decode_breakdown(DS, C910, 1, 96 * 320, 4096, ep=320, dtype="int8", query_tokens=q)
    per_token = decode_seconds_per_token(DS, C910, 1, 96 * 320, 4096, ep=320, dtype="int8")
    assert float(per_token) == pytest.approx(float(step["total"]) / kept)
    # The engine's service arrays carry the model's MTP modules into the same function.
    import dataclasses

    from simulation.engine.scenario import default_scenario

    scen = default_scenario(cards=768, seed=1)
    svc = dataclasses.replace(scen.services[0], model="deepseek-r1", tp=1, ep=320)
    svc = dataclasses.replace(svc, weight_dtype="int8")
    arrays = ServiceTable([svc], C910, scen.policy)
    assert arrays.m.mtp_layers[0] == 1.0
    sched = arrays._decode(np.array([96.0 * 320]))[0]
    direct = decode_seconds_per_token(
        DS, C910, 1, 96 * 320, float(arrays.context[0]), ep=320, dtype=svc.weight_dtype
    )
    assert sched == pytest.approx(float(direct))
    # Without MTP (a stack that does not run it, or a dense model) the step is one token.
    off = decode_seconds_per_token(DS, C910, 1, 96 * 320, 4096, ep=320, dtype="int8", mtp=False)
    one = decode_breakdown(DS, C910, 1, 96 * 320, 4096, ep=320, dtype="int8")["total"]
    assert float(off) == pytest.approx(float(one))
    dense = get_model("llama-2-70b")
    assert tuple(float(x) for x in mtp_step(dense, p)) == (1.0, 1.0)


def test_hf_import_reads_the_mtp_modules_and_refuses_a_bad_count():
    assert model_from_hf_config(DSV3, model_id="x").mtp_layers == 0
    m = model_from_hf_config({**DSV3, "num_nextn_predict_layers": 1}, model_id="x")
    assert m.mtp_layers == 1
    with pytest.raises(ValueError, match="num_nextn_predict_layers"):
        model_from_hf_config({**DSV3, "num_nextn_predict_layers": -1}, model_id="x")


def test_910c_expert_all_to_all_takes_what_cloudmatrix_infers_operators_take():
    rows = {c["name"]: c for c in validate_current.cloudmatrix_operator_checks()}
    for name in ("dispatch EP8", "dispatch EP256", "combine EP8"):
        row = rows[f"{name}, 128 tokens/rank"]
        assert row["ratio"] == pytest.approx(1.0, abs=0.15), row
    # Held-out per-layer decode figures are printed next to the twin's, within a factor 1.5.
    for key in ("no mtp", "mtp"):
        row = rows[f"decode layer, batch 96/NPU, {key}"]
        assert row["role"] == "held out" and 0.67 < row["ratio"] < 1.5, row


def test_kv_heads_fewer_than_the_tp_cards_are_stored_on_each_card_that_needs_them():
    from simulation.engine.perf.inference import kv_replication
    from simulation.engine.perf.operating import kv_room_per_group

    qwen, llama = get_model("qwen3-235b-a22b"), get_model("llama-2-70b")
    # Qwen3-235B: 4 KV heads on TP8 -> each stored twice; Llama-2-70B: 8 on TP8 -> once.
    assert float(kv_replication(qwen, 8)) == 2.0 and float(kv_replication(qwen, 4)) == 1.0
    assert float(kv_replication(llama, 8)) == 1.0
    # MLA's one latent per layer sits on every card of the group; attention DP stores it once.
    assert float(kv_replication(DS, 8)) == 8.0 and float(kv_replication(DS, 1)) == 1.0
    h100 = get_hardware("h100-sxm")
    tp8 = kv_room_per_group(qwen, h100, 8, 8, "fp8", 2176.0)
    free = perf_point(
        "qwen3-235b-a22b", "h100-sxm", 8, 1, 128, ep=8, dtype="fp8", output_tokens=4096
    )
    assert free["kv_capacity_sequences"] == tp8
    naive = int(
        (
            h100.hbm_bytes
            - (qwen.params - qwen.routed_expert_params) / 8
            - qwen.routed_expert_params / 8
        )
        * 8
        * 0.9
        // (2176.0 * qwen.kv_bytes_per_token)
    )
    assert tp8 == pytest.approx(naive / 2, abs=1)


def test_the_scheduler_sizes_a_replica_batch_with_the_kv_room_perf_reports():
    import dataclasses

    from simulation.engine.scenario import default_scenario

    scen = default_scenario(cards=768, seed=1)
    h100 = get_hardware("h100-sxm")
    base = dataclasses.replace(scen.services[0], model="qwen3-235b-a22b", ep=8, max_batch=4096)
    svc = dataclasses.replace(base, weight_dtype="fp8")
    rows = []
    for tp in (4, 8):
        s = dataclasses.replace(svc, tp=tp)
        table = ServiceTable([s], h100, scen.policy)
        rows.append((table.kv_stored_per_token[0], table.kv_room_per_replica[0]))
    (kv4, room4), (kv8, room8) = rows
    assert kv8 == pytest.approx(2 * kv4)  # same replica cards (ep 8), twice the KV per token
    assert room8 == pytest.approx(room4)
