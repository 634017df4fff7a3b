"""Comparisons carry their spread over seeds (issue 25 part 4)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from simulation.engine.spread import combine, stats

ROOT = Path(__file__).resolve().parents[2]


def test_stats_give_mean_range_and_a_t_interval():
    s = stats([1.0, 2.0, 3.0])
    assert (s["mean"], s["min"], s["max"], s["n"]) == (2.0, 1.0, 3.0, 3)
    assert s["ci95_high"] - s["mean"] == pytest.approx(4.303 * 1.0 / 3**0.5)
    one = stats([5.0])
    assert one["mean"] == 5.0 and one["sd"] == 0.0


def test_combine_pairs_the_difference_by_seed():
    runs = {
        7: {"split": {"x": 1.0, "name": "a"}, "unified": {"x": 3.0, "name": "a"}},
        8: {"split": {"x": 5.0, "name": "a"}, "unified": {"x": 6.0, "name": "a"}},
    }
    out = combine(runs)
    assert out["seeds"] == [7, 8]
    assert out["split"]["x"] == 3.0 and out["unified"]["x"] == 4.5
    d = out["spread"]["unified_minus_split"]["x"]
    assert (d["min"], d["max"], d["mean"]) == (1.0, 2.0, 1.5)
    assert out["split"]["name"] == "a"  # non-numeric fields kept from the first seed


def test_compare_reports_every_figure_over_seeds():
    r = subprocess.run(
        [sys.executable, "-m", "simulation.engine", "compare", "--cards", "128", "--hours",
         "0.5", "--seeds", "2", "--serial", "--json", "-"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "2 seeds 7..8: mean [min, max]" in r.stderr
    out = json.loads(r.stdout)
    assert out["seeds"] == [7, 8]
    for pol in ("split", "unified", "unified_minus_split"):
        st = out["spread"][pol]["ttft_p99_ms"]
        assert st["n"] == 2 and st["min"] <= st["mean"] <= st["max"]
