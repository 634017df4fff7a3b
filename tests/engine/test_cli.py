"""Command-line smoke tests (subprocess, as a user would run them)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "simulation.engine", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_perf_prints_the_calibration_point_as_json():
    r = _run(
        "perf",
        "--model",
        "llama-2-70b",
        "--hardware",
        "h100-sxm",
        "--tp",
        "8",
        "--batch",
        "1",
        "--prompt-tokens",
        "2048",
        "--profile",
        "splitwise-2023",
        "--json",
        "-",
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["profile"] == "splitwise-2023"
    # DESIGN.md point (a 2023-stack measurement): within the 15% target, not fitted (issue 13).
    assert out["prefill_ms"] == pytest.approx(137, rel=0.15)
    assert out["decode_ms_per_token"] == pytest.approx(30, rel=0.15)
    assert {"ttft_ms", "tpot_ms", "breakdown"} <= set(out)


def test_kvcache_replays_a_mooncake_trace_with_both_policies(tmp_path):
    p = tmp_path / "m.jsonl"
    lines = []
    for i in range(300):
        hot = [i % 7, 100 + i % 5]
        lines.append(
            json.dumps(
                {
                    "timestamp": i * 10,
                    "input_length": 2048,
                    "output_length": 8,
                    "hash_ids": hot + [10_000 + i],
                }
            )
        )
    p.write_text("\n".join(lines) + "\n")
    res = {}
    for pol in ("lru", "lru-k"):
        r = _run(
            "kvcache",
            "--trace",
            f"mooncake:{p}",
            "--capacity-blocks",
            "8",
            "--policy",
            pol,
            "--json",
            "-",
        )
        assert r.returncode == 0, r.stderr
        res[pol] = json.loads(r.stdout)
        assert 0 <= res[pol]["hit_ratio"] <= 1 and res[pol]["evictions"] >= 0
    assert res["lru-k"]["hit_ratio"] >= res["lru"]["hit_ratio"]


def test_compare_writes_both_policies_with_every_required_key(tmp_path):
    out = tmp_path / "cmp.json"
    r = _run(
        "compare", "--cards", "512", "--hours", "1", "--seed", "7", "--json", str(out), "--serial"
    )
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    keys = {
        "utilization_allocated_mean",
        "utilization_busy_mean",
        "training_samples_per_s_mean",
        "mfu_mean",
        "inference_p50_ms",
        "inference_p99_ms",
        "ttft_p99_ms",
        "slo_attainment",
        "hbm_live_fraction_mean",
        "kv_hit_ratio",
        "preemptions",
        "energy_mwh",
    }
    for pol in ("split", "unified"):
        assert keys <= set(data[pol])
    assert "split" in r.stdout and "unified" in r.stdout  # the side-by-side table
    assert "100%" in r.stderr  # the progress bar


def test_compare_replays_azure_and_philly_traces_and_json_dash_goes_to_stdout(tmp_path):
    az = tmp_path / "az.csv"
    rows = ["TIMESTAMP,ContextTokens,GeneratedTokens"]
    for i in range(200):
        rows.append(f"2023-11-16 {10 + i // 60:02d}:{i % 60:02d}:03.9799600,{500 + i},{50 + i}")
    az.write_text("\n".join(rows) + "\n")
    ph = tmp_path / "ph.csv"
    ph.write_text(
        "timestamp,duration,num_gpus,gpu_time,cluster\n"
        + "".join(f"{i * 60},7200,{8 * (1 + i % 4)},0,c\n" for i in range(30))
    )
    r = _run(
        "compare",
        "--cards",
        "512",
        "--hours",
        "1",
        "--json",
        "-",
        "--serial",
        "--inference-trace",
        f"azure:{az}",
        "--training-trace",
        f"philly:{ph}",
    )
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert {"split", "unified"} <= set(data) and data["seeds"] == [7, 8, 9]  # --seeds 3


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("compare", "--cards", "-5"), "--cards"),
        (("compare", "--hours", "abc"), "--hours"),
        (("compare", "--inference-trace", "philly:x.csv"), "azure:FILE"),
        (("compare", "--inference-trace", "azure:/no/such/file.csv"), "no such file"),
        (("perf", "--model", "gpt-9", "--hardware", "h100-sxm"), "--model"),
        (("kvcache", "--trace", "mooncake:/no/file", "--capacity-blocks", "4"), "no such"),
        (("kvcache", "--capacity-blocks", "4"), "--trace"),
    ],
)
def test_bad_arguments_are_argparse_errors(args, needle):
    r = _run(*args)
    assert r.returncode == 2
    assert needle in r.stderr


def test_a_bad_trace_row_is_reported_with_file_and_line(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text(
        '{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [1]}\n'
        '{"timestamp": 2, "input_length": -5, "output_length": 1, "hash_ids": [1]}\n'
    )
    r = _run("kvcache", "--trace", f"mooncake:{p}", "--capacity-blocks", "4")
    assert r.returncode == 2
    assert f"{p}:2:" in r.stderr and "input_length" in r.stderr


def test_compare_with_one_seed_prints_the_table_and_writes_the_json(tmp_path):
    # Issue 35 item 8: `--seeds 1` used to crash formatting a count averaged to a float.
    out = tmp_path / "one.json"
    r = _run("compare", "--cards", "64", "--hours", "1", "--seeds", "1", "--json", str(out))
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    assert data["seeds"] == [7]
    assert data["spread"]["split"]["preemptions"]["n"] == 1
    assert "preemptions" in r.stdout and "unified" in r.stdout


def test_the_command_line_modules_stay_under_500_lines():
    engine = ROOT / "simulation" / "engine"
    for name in ("cli.py", "cli_tables.py"):
        assert len((engine / name).read_text().splitlines()) < 500, name
