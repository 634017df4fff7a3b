"""Hardware and model catalogs carry DESIGN.md's figures."""

from __future__ import annotations

import pytest

from simulation.engine.catalog import HARDWARE, MODELS, get_hardware, get_model


def test_catalog_has_every_required_hardware_and_model_id():
    assert {
        "h100-sxm",
        "a100-sxm",
        "ascend-910b",
        "ascend-910c",
        "ascend-950pr",
        "ascend-950dt",
    } <= set(HARDWARE)
    assert {"llama-2-70b", "bloom-176b", "gpt-3-175b", "llama-3-8b"} <= set(MODELS)


def test_every_hardware_entry_states_a_confidence():
    for hw in HARDWARE.values():
        assert hw.confidence in {"high", "medium", "low"}
        assert hw.idle_watts < hw.tdp_watts


def test_a100_figures_match_the_issue():
    a = get_hardware("a100-sxm")
    assert a.hbm_bytes == 80 * 2**30
    assert a.hbm_bandwidth_bytes_per_s == pytest.approx(2.0e12)
    assert a.peak_flops == pytest.approx(312e12)
    assert a.tdp_watts == 400


def test_llama2_70b_kv_cache_is_320_kib_per_token_and_weights_two_bytes_per_parameter():
    m = get_model("llama-2-70b")
    assert m.kv_bytes_per_token == 320 * 1024
    assert m.weight_bytes == pytest.approx(140e9)
    assert get_model("gpt-3-175b").weight_bytes == pytest.approx(350e9)


def test_unknown_catalog_ids_raise_value_error_naming_the_id():
    with pytest.raises(ValueError, match="h200"):
        get_hardware("h200")
    with pytest.raises(ValueError, match="model"):
        get_model("gpt-5")
