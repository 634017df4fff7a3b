"""Scenario validation, JSON round trip and the default mix."""

from __future__ import annotations

import dataclasses

import pytest

from simulation.engine import (
    InferenceService,
    Policy,
    Scenario,
    Topology,
    TrainingJob,
    default_scenario,
)


def test_scenario_survives_a_json_round_trip_unchanged(small_scenario):
    text = small_scenario.to_json()
    again = Scenario.from_json(text)
    assert again == small_scenario
    assert again.to_json() == text


def test_default_scenario_at_10240_cards_has_the_required_mix():
    s = default_scenario(10240, seed=7)
    assert len(s.training_jobs) >= 200
    assert len(s.services) >= 50
    crit = {x.criticality for x in s.services}
    assert crit == {"core", "non-core"}
    tenants = {x.tenant for x in s.services} | {j.tenant for j in s.training_jobs}
    assert len(tenants) >= 3
    assert any(j.elastic for j in s.training_jobs)
    assert all(x.peak_to_trough > 1 for x in s.services)


def test_default_scenario_is_deterministic_and_scales_with_size():
    a, b = default_scenario(2048, seed=5), default_scenario(2048, seed=5)
    assert a == b
    small = default_scenario(1024, seed=5)
    assert len(small.training_jobs) < len(default_scenario(10240, seed=5).training_jobs)


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: Topology(cards=0), "cards"),
        (lambda: Topology(cards=64, hardware="tpu-v9"), "hardware"),
        (lambda: Topology(cards=64, inter_rack_convergence=0.5), "inter_rack_convergence"),
        (lambda: TrainingJob("j", "t", 1e9, 16, 8, 1e6), "max_cards"),
        (lambda: TrainingJob("j", "t", -1.0, 8, 8, 1e6), "params"),
        (lambda: TrainingJob("j", "t", 1e9, 8, 8, 1e6, base_mfu=0.95), "base_mfu"),
        (
            lambda: InferenceService("s", "t", "llama-3-8b", 1, 1.0, criticality="gold"),
            "criticality",
        ),
        (
            lambda: InferenceService("s", "t", "llama-3-8b", 1, 1.0, traffic_share=1.5),
            "traffic_share",
        ),
        (lambda: InferenceService("s", "t", "nope", 1, 1.0), "model"),
        (lambda: InferenceService("s", "t", "llama-3-8b", 1, 0.0), "mean_rate_rps"),
        (lambda: Policy(name="fifo"), "name"),
        (lambda: Policy(kv_eviction="arc"), "kv_eviction"),
        (lambda: Policy(night_window=(22, 30)), "night_window"),
    ],
)
def test_invalid_values_raise_value_error_naming_the_field(build, field):
    with pytest.raises(ValueError, match=f"'{field}'"):
        build()


def test_from_dict_rejects_unknown_fields_and_names_them(small_scenario):
    d = small_scenario.to_dict()
    d["services"][0]["colour"] = "red"
    with pytest.raises(ValueError, match="colour"):
        Scenario.from_dict(d)


def test_duplicate_workload_names_are_rejected(small_scenario):
    jobs = list(small_scenario.training_jobs)
    jobs.append(dataclasses.replace(jobs[0]))
    with pytest.raises(ValueError, match="unique"):
        dataclasses.replace(small_scenario, training_jobs=jobs)


def test_invalid_json_is_a_value_error():
    with pytest.raises(ValueError, match="JSON"):
        Scenario.from_json("{not json")


def test_a_replica_too_small_for_its_model_is_rejected_naming_tp():
    from simulation.engine import Engine

    s = Scenario(
        topology=Topology(cards=64, hardware="h100-sxm"),
        services=[InferenceService("big", "t", "gpt-3-175b", 2, 1.0)],
    )
    with pytest.raises(ValueError, match="'tp'"):
        Engine(s)


def test_default_services_fit_their_models_context_windows():
    """A 2k-context model is not sent 1-4k-token prompts (issue 25 known defect)."""
    from simulation.engine.catalog import get_model
    from simulation.engine.scenario.defaults import CONTEXT_OVERFLOW, overflow_share

    for seed in (7, 8):
        scen = default_scenario(10240, seed)
        for s in scen.services:
            ctx = get_model(s.model).max_context
            assert s.prompt_tokens_mean + s.output_tokens_mean < ctx / 2
            share = overflow_share(s.prompt_tokens_mean, s.output_tokens_mean, ctx)
            assert share <= CONTEXT_OVERFLOW * 1.01


def test_default_run_truncates_almost_no_prompt():
    from simulation.engine import Engine

    eng = Engine(default_scenario(512, seed=7, n_training_jobs=4, hours=1.0))
    eng.run_until(3600.0)
    summ = eng.summary()
    assert summ["prompts_truncated"] <= 0.02 * summ["inference_requests"]
