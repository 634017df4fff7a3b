"""Replays that fit the trace (issue 35 item 5): window, truncation and a layout perf accepts."""

from __future__ import annotations

import json

import pytest

from simulation.engine.catalog import get_model
from simulation.engine.perf.inference import perf_point
from simulation.engine.replay import apply_replay
from simulation.engine.scenario import default_scenario


def _mooncake(path, n=40, prompt=20_000):
    lines = [
        json.dumps({"timestamp": i * 500, "input_length": prompt + i, "output_length": 64,
                    "hash_ids": [i % 5, 1000 + i]})
        for i in range(n)
    ]  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def scen():
    return default_scenario(512, seed=3, n_training_jobs=4, n_services=5)


def test_a_long_context_trace_gets_a_model_whose_window_fits(tmp_path, scen):
    p = _mooncake(tmp_path / "long.jsonl")
    rep, summ = apply_replay(scen, "mooncake", p, horizon_s=600.0)
    assert get_model(summ["model"]).max_context >= 20_000 + 40 + 64
    assert summ["prompts_truncated"] == 0
    assert rep.services[0].model == summ["model"]


def test_truncation_is_refused_unless_asked_for(tmp_path, scen):
    p = _mooncake(tmp_path / "long.jsonl")
    with pytest.raises(ValueError, match=r"40 of 40 .*llama-2-70b.*--truncate-prompts"):
        apply_replay(scen, "mooncake", p, horizon_s=600.0, model="llama-2-70b")
    _, summ = apply_replay(scen, "mooncake", p, horizon_s=600.0, model="llama-2-70b", truncate=True)
    assert summ["prompts_truncated"] == 40


def test_an_moe_trace_model_runs_a_layout_perf_accepts(tmp_path, scen):
    p = _mooncake(tmp_path / "short.jsonl", prompt=2_000)
    rep, summ = apply_replay(scen, "mooncake", p, horizon_s=600.0, model="deepseek-r1")
    svc = rep.services[0]
    assert svc.ep > 1 and svc.ep % svc.tp == 0
    # The perf command's own check: it refuses tp=16 ep=1 for this model on this hardware.
    perf_point(svc.model, scen.topology.hardware, svc.tp, 1, 2_000, ep=svc.ep)
    with pytest.raises(ValueError, match="do not fit"):
        perf_point(svc.model, scen.topology.hardware, 16, 1, 2_000, ep=1)


def test_an_moe_trace_model_serves_a_long_context_replay_without_timing_out(tmp_path, scen):
    # Issue 35: deepseek-r1 used to run a layout perf refused; 97 % of requests timed out.
    from simulation.engine import Engine

    p = _mooncake(tmp_path / "long.jsonl", n=300, prompt=12_000)
    rep, summ = apply_replay(scen, "mooncake", p, horizon_s=900.0, model="deepseek-r1")
    eng = Engine(rep)
    eng.run_until(900.0)
    out = eng.summary()
    assert out["inference_requests"] >= 250
    assert out["inference_timeouts"] <= 0.01 * out["inference_requests"]
    # MLA attention data-parallel (one latent per card), experts over the replica's cards.
    assert (summ["tp"], rep.services[0].tp) == (1, 1) and summ["ep"] >= 8
    perf_point("deepseek-r1", scen.topology.hardware, summ["tp"], 1, 12_000, ep=summ["ep"])


def test_the_compare_command_refuses_to_truncate_a_trace_it_was_not_asked_to(tmp_path, capsys):
    from simulation.engine import cli

    p = _mooncake(tmp_path / "long.jsonl", n=20)
    argv = ["compare", "--cards", "512", "--hours", "0.1", "--seeds", "1"]
    argv += ["--inference-trace", f"mooncake:{p}", "--trace-model", "llama-2-70b"]
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "20 of 20 replayed requests" in err and "--truncate-prompts" in err
