"""The READMEs' validation tables are what ``validate`` computes (issue 35 item 8)."""

from __future__ import annotations

import json

import pytest

from simulation.engine import cli, validate, validate_current, validate_small_batch
from simulation.engine import validate_tables as vt
from simulation.engine.calibration import splitwise


def _quiet(*_a, **_k) -> None:
    return None


@pytest.fixture(scope="module")
def perf_result() -> dict:
    """The serving-model parts of ``validate.run`` (the cheap ones), as it assembles them."""
    return {
        "all": validate.summary(splitwise.ROWS),
        "calibration": validate.summary(splitwise.CALIBRATION_ROWS),
        "validation": validate.summary(splitwise.VALIDATION_ROWS),
        "design_point": validate.design_point(),
        "current": validate_current.run(_quiet),
        "small_batch": validate_small_batch.run(_quiet),
    }


def test_the_engine_readme_perf_tables_are_what_validate_computes_now(perf_result):
    committed = vt.blocks(vt.ENGINE_README.read_text(encoding="utf-8"))
    for name, table in vt.perf_tables(perf_result).items():
        assert committed.get(name) == table, (
            f"simulation/engine/README.md table {name!r} differs from what validate computes; "
            "rerun `python -m simulation.engine validate --write-readme`"
        )


def test_the_repo_readme_shows_the_held_out_checks_the_engine_readme_shows():
    repo = vt.blocks(vt.REPO_README.read_text(encoding="utf-8"))
    engine = vt.blocks(vt.ENGINE_README.read_text(encoding="utf-8"))
    assert repo["held-out"] == engine["held-out"]
    assert len(repo["held-out"].split("\n")) >= 4


def test_validate_prints_the_grouped_rows_the_readme_table_shows(perf_result):
    lines = []
    validate_current.run(lines.append)
    groups = vt.trtllm_groups(perf_result["current"]["throughput"])
    qwen = next(g for g in groups if "Qwen3" in g["label"])
    printed = [line for line in lines if "Qwen3" in line and "median |log ratio|" in line]
    assert printed == [
        f"  held out: {qwen['label']} ({qwen['rows']} rows): median |log ratio| "
        f"{qwen['median_abs_log']:.3f} (ratio {qwen['ratio_min']:.2f}-{qwen['ratio_max']:.2f})"
    ]
    assert f"{qwen['median_abs_log']:.3f}" in vt.trtllm_table(perf_result["current"])


def test_write_readme_rewrites_only_the_marked_blocks_at_their_indentation(tmp_path):
    doc = tmp_path / "README.md"
    doc.write_text(
        "intro | not a table\n"
        "<!-- validate:moe -->\n| stale |\n<!-- /validate:moe -->\n"
        "* item\n\n  <!-- validate:operators -->\n  <!-- /validate:operators -->\n"
        "<!-- validate:unknown -->\nkept\n<!-- /validate:unknown -->\n",
        encoding="utf-8",
    )
    written = vt.write_readmes({"moe": "| a |\n|---|", "operators": "| b |"}, paths=[doc])
    assert [w.rsplit(": ", 1)[1] for w in written] == ["moe", "operators"]
    text = doc.read_text(encoding="utf-8")
    assert "| stale |" not in text and "intro | not a table" in text
    assert "  <!-- validate:operators -->\n  | b |\n  <!-- /validate:operators -->" in text
    assert vt.blocks(text) == {"moe": "| a |\n|---|", "operators": "| b |", "unknown": "kept"}


def test_render_builds_the_demand_tables_from_a_saved_validate_result(perf_result, tmp_path):
    res = dict(perf_result)
    res["training_demand"] = {
        k: {"twin": 1.0, "min": 0.9, "max": 1.1, "source": 1.0, "role": "fitted"}
        for k in (
            "median_run_s",
            "mean_cards_per_job",
            "single_card_share",
            "iod_10min",
            "hourly_peak_trough",
        )
    }
    res["held_out"] = {"queue_wait_s_mean": {"twin": 1720.0, "source": 860.0}}
    # The JSON ``validate --json`` writes is what ``render`` reads.
    saved = tmp_path / "v.json"
    saved.write_text(json.dumps(res, default=float), encoding="utf-8")
    tables = vt.render(json.loads(saved.read_text(encoding="utf-8")))
    assert "| mean cards per job | fitted | 1.00 [0.90, 1.10] | 1.00 |" in tables["training-demand"]
    assert "1,720 s (×2.00)" in tables["held-out"]
    assert "fleet" not in tables  # no fleet run in this result: its table is left alone


def test_the_validate_command_offers_to_rewrite_the_readmes():
    args = cli.build_parser().parse_args(["validate", "--write-readme", "--no-tails"])
    assert args.write_readme and args.no_tails


def test_the_tail_table_has_one_cell_per_servers_arrivals_and_load():
    rows = [
        {"servers": c, "cv": cv, "rho": rho, "error": 0.01 * c * cv * rho}
        for c in (8, 32)
        for cv in (1.0, 4.0)
        for rho in (0.3, 0.95)
    ]
    table = vt.tail_table({"rows": rows, "median_abs": 0.013, "max_abs": 0.4})
    lines = table.split("\n")
    assert lines[0] == "| servers, arrivals | ρ = 0.3 | ρ = 0.95 |"
    assert "| c = 32, CV 4 | +38.4% | +121.6% |" in lines
    assert len(lines) == 2 + 4 + 1 and "max 40.0%" in lines[-1]
