"""Time-faithful trace replay (issue 13) and day-0 model import through the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from simulation.engine import Engine, default_scenario
from simulation.engine.replay import apply_replay, load_trace, per_step, trace_summary, window

ROOT = Path(__file__).resolve().parents[2]


def _azure(path: Path, gaps_s, prompt=1000, output=200) -> Path:
    t = datetime(2023, 11, 16, 18, 0, 0)
    rows = ["TIMESTAMP,ContextTokens,GeneratedTokens"]
    for i, g in enumerate(gaps_s):
        t += timedelta(seconds=float(g))
        rows.append(f"{t:%Y-%m-%d %H:%M:%S}.{t.microsecond:06d}0,{prompt + i % 7},{output + i % 5}")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_replay_bins_requests_at_their_own_timestamps(tmp_path):
    # 120 requests in the first 10 minutes, 30 in the next 10: rates 0.2 and 0.05 req/s.
    p = _azure(tmp_path / "a.csv", [5.0] * 120 + [20.0] * 30)
    tr, reuse = load_trace("azure", p)
    assert reuse is None and tr.t.size == 150
    w = window(tr, 0.0, 3600.0, 1.0, loop=False)
    ps = per_step(w, 60.0, 60)
    assert ps["rate"][:9].mean() == pytest.approx(0.2, rel=0.1)
    assert ps["rate"][12:18].mean() == pytest.approx(0.05, rel=0.2)
    assert ps["rate"][25:].sum() == 0.0  # no looping: nothing after the trace ends
    fast = window(tr, 0.0, 3600.0, 2.0, loop=False)
    assert fast.t.size == tr.t.size and fast.t.max() == pytest.approx(tr.t.max() / 2)
    late = window(tr, 600.0, 3600.0, 1.0, loop=False)
    assert late.t.size == 30 and late.t.min() >= 0.0
    looped = window(tr, 0.0, 3 * 3600.0, 1.0, loop=True)
    assert looped.t.size > 2 * tr.t.size


def test_summary_reports_rate_burstiness_and_token_percentiles(tmp_path):
    rng = np.random.default_rng(1)
    p = _azure(tmp_path / "b.csv", rng.exponential(2.0, 400))
    s = trace_summary(load_trace("azure", p)[0])
    assert s["requests"] == 400
    assert s["mean_rate_rps"] == pytest.approx(0.5, rel=0.15)
    assert s["interarrival_cv"] == pytest.approx(1.0, abs=0.2)
    assert 1000 <= s["input_tokens_p50"] <= s["input_tokens_p99"] <= 1006


def test_engine_replays_the_trace_without_inflating_demand(tmp_path):
    p = _azure(tmp_path / "c.csv", [2.0] * 900)  # 0.5 req/s for 30 minutes
    scen = default_scenario(256, seed=3, n_training_jobs=8, n_services=5)
    rep, summ = apply_replay(scen, "azure", p, horizon_s=3600.0)
    assert len(rep.services) == 1 and summ["requests"] == 900
    eng = Engine(rep)
    eng.run_until(3600.0)
    out = eng.summary()
    assert out["inference_requests"] == pytest.approx(900, rel=0.02)
    # Capacity follows demand: a few replicas of one 70B service, not the whole cluster.
    assert eng.snapshot().cluster["cluster_inference_cards_allocated"] < 64


def test_mooncake_replay_feeds_prefix_reuse_from_hash_ids(tmp_path):
    p = tmp_path / "m.jsonl"
    lines = [
        json.dumps(
            {"timestamp": i * 500, "input_length": 1024, "output_length": 64, "hash_ids": [1, 2]}
        )
        for i in range(50)
    ]
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tr, reuse = load_trace("mooncake", p)
    assert tr.t.size == 50 and reuse == pytest.approx(98 / 100)
    rep, _ = apply_replay(default_scenario(128, seed=1), "mooncake", p, horizon_s=600.0)
    assert rep.services[0].prefix_share == pytest.approx(0.98)


def _cli(*args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "simulation.engine", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def test_compare_prints_the_replay_summary_and_serving_keys(tmp_path):
    p = _azure(tmp_path / "d.csv", [3.0] * 400)
    r = _cli(
        "compare", "--cards", "128", "--hours", "0.5", "--serial", "--json", "-",
        "--inference-trace", f"azure:{p}", "--rate-scale", "2", "--start", "1m",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "replay azure:" in r.stderr and "inter-arrival CV" in r.stderr
    out = json.loads(r.stdout)
    for pol in ("split", "unified"):
        for k in ("ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p99_ms", "e2e_p99_ms"):
            assert out[pol][k] > 0
        assert out[pol]["inference_requests"] == pytest.approx(380, rel=0.05)
        assert out[pol]["inference_timeouts"] >= 0


def test_model_add_then_perf_uses_the_new_model(tmp_path):
    cfg = tmp_path / "tiny-moe" / "config.json"
    cfg.parent.mkdir()
    cfg.write_text(
        json.dumps(
            {
                "num_hidden_layers": 24,
                "hidden_size": 2048,
                "num_attention_heads": 16,
                "num_key_value_heads": 4,
                "intermediate_size": 5632,
                "moe_intermediate_size": 1024,
                "num_experts": 32,
                "num_experts_per_tok": 4,
                "vocab_size": 32000,
            }
        ),
        encoding="utf-8",
    )
    env = {"CLUSTER_PORTAL_MODEL_CATALOG": str(tmp_path / "cat.json")}
    r = _cli("model", "add", str(cfg), env=env)
    assert r.returncode == 0, r.stderr
    assert "added tiny-moe" in r.stdout
    r = _cli(
        "perf", "--model", "tiny-moe", "--hardware", "h100-sxm", "--tp", "1", "--ep", "2",
        "--json", "-", env=env,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["decode_ms_per_token"] > 0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"hidden_size": 1024}), encoding="utf-8")
    r = _cli("model", "add", str(bad), env=env)
    assert r.returncode != 0 and "num_hidden_layers" in r.stderr
