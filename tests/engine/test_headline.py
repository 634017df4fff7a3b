"""The one headline gain (issue 35 item 2) and ``compare --seeds 1`` (item 8)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from simulation.engine.headline import describe, headline
from simulation.engine.spread import combine, stats

ROOT = Path(__file__).resolve().parents[2]


def _runs(split_unified: list[tuple[float, float]]) -> dict:
    return {
        seed: {
            "split": {"goodput_pflop_per_card_hour": a, "utilization_busy_mean": 0.3,
                      "utilization_allocated_mean": 0.8},
            "unified": {"goodput_pflop_per_card_hour": b, "utilization_busy_mean": 0.4 + seed / 100,
                        "utilization_allocated_mean": 0.5},
        }
        for seed, (a, b) in enumerate(split_unified, start=7)
    }  # fmt: skip


def test_the_headline_gain_is_paired_by_seed_with_its_interval():
    runs = _runs([(100.0, 150.0), (200.0, 220.0), (50.0, 80.0)])
    h = headline(runs)
    want = stats([150 / 100 - 1, 220 / 200 - 1, 80 / 50 - 1])  # unified / split - 1, per seed
    assert h["goodput"]["gain"] == pytest.approx(want)
    assert h["goodput"]["gain"]["ci95_low"] < h["goodput"]["gain"]["mean"]
    assert h["busy"]["gain"]["mean"] == pytest.approx(0.1 + 0.08)
    assert h["allocated"]["gain"]["mean"] == pytest.approx(-0.3)
    assert "not a gain" in h["allocated"]["note"]
    # combine() carries the very same figure, so every reader of a result sees one number.
    assert combine(runs)["headline"] == h
    text = "\n".join(describe(h))
    assert "+40.0%" in text and "95% CI" in text and "allocated" in text


def test_one_seed_has_no_interval_and_says_so():
    h = headline(_runs([(100.0, 130.0)]))
    assert h["goodput"]["gain"]["mean"] == pytest.approx(0.3)
    assert h["goodput"]["gain"]["ci95_low"] is None
    assert "one seed: no interval" in "\n".join(describe(h))


def test_compare_with_one_seed_writes_its_json_and_prints_the_headline(tmp_path):
    out = tmp_path / "one.json"
    r = subprocess.run(
        [sys.executable, "-m", "simulation.engine", "compare", "--cards", "256", "--hours",
         "1", "--seeds", "1", "--serial", "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    assert data["seeds"] == [7]
    h = data["headline"]
    g = h["goodput"]
    assert g["split"]["mean"] == data["split"]["goodput_pflop_per_card_hour"] > 0
    assert g["gain"]["mean"] == pytest.approx(
        data["unified"]["goodput_pflop_per_card_hour"]
        / data["split"]["goodput_pflop_per_card_hour"]
        - 1
    )
    assert "Headline" in r.stdout and "preemptions" in r.stdout  # an integer row, one seed
