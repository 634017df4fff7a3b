"""The shipped recording rules (issue 33 §3) are the portal's own PromQL, load into Prometheus'
rule checker, and record what the ingestion mapping gives for an awkward capture (Debian's
``promtool test rules``: the rule engine Prometheus and vmalert evaluate)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from telemetry.read.fleet import CARD_METRICS, HEALTH
from telemetry.read.promql.client import ResultSeries
from telemetry.read.promql.rules import (
    RULES_FILE,
    record_name,
    recording_rules_text,
)
from telemetry.read.promql.translate import to_mapped
from tests.telemetry.test_promql_fleet_aggregation import _capture_rows

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool is not installed (apt-get install prometheus)"
)
ROW = re.compile(r"^(\w+)\{(.*)\} (\S+)$")
LABEL = re.compile(r'(\w+)="([^"]*)"')


def _capture() -> list[tuple[str, dict[str, str], float]]:
    """The capture's first scrape, less NaN (no point on a server)."""
    rows = []
    for line in _capture_rows(0):
        name, labels, value = ROW.match(line).groups()
        if value != "NaN":
            rows.append((name, dict(LABEL.findall(labels)), float(value)))
    return rows


def _mapped_totals() -> dict[str, tuple[float, int]]:
    """Per card metric, the sum and count over chips with a chip label, one value per chip,
    through the ingestion mapping (what the rules must record)."""
    results = [
        (name, ResultSeries({"__name__": name, **labels}, [(1000.0, value)]))
        for name, labels, value in _capture()
        if labels.get("UUID") or labels.get("vdie_id")  # index-plus-host chips are not recorded
    ]
    per_chip: dict[str, dict[tuple, float]] = {}
    for sample in to_mapped(results, label_map={}):
        if sample.entity.kind == "accelerator":
            card = (sample.entity.host, sample.entity.vendor_id)
            per_chip.setdefault(sample.metric, {})[card] = sample.value
    return {metric: (sum(v.values()), len(v)) for metric, v in per_chip.items()}


def test_the_shipped_rules_file_is_what_the_portal_writes():
    assert RULES_FILE.read_text() == recording_rules_text(), (
        "deploy/prometheus/cluster-portal-rules.yml is stale: "
        "run `python manage.py promql_recording_rules --write`"
    )


@needs_promtool
def test_promtool_accepts_the_rules():
    done = subprocess.run(
        [PROMTOOL, "check", "rules", str(RULES_FILE)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr


@needs_promtool
def test_the_rules_record_what_the_ingestion_mapping_gives(tmp_path: Path):
    totals = _mapped_totals()
    series = []
    for name, labels, value in _capture():
        rendered = ",".join(f'{k}="{v}"' for k, v in labels.items())
        series.append({"series": f"{name}{{{rendered}}}", "values": f"{value!r}x4"})
    checks = []
    for metric in CARD_METRICS:
        if metric == HEALTH or metric not in totals:
            continue
        total, cards = totals[metric]
        for aggregate, expected in (("sum", total), ("cards", float(cards))):
            name = record_name(metric, aggregate)
            checks.append(
                {
                    "expr": name,
                    "eval_time": "2m",
                    "exp_samples": [{"labels": name, "value": expected}],
                }
            )
    assert len(checks) >= 8  # utilisation, temperature, power, HBM used and total
    shutil.copy(RULES_FILE, tmp_path / "rules.yml")
    spec = {
        "rule_files": ["rules.yml"],
        "evaluation_interval": "30s",
        "tests": [{"interval": "30s", "input_series": series, "promql_expr_test": checks}],
    }
    (tmp_path / "test.yml").write_text(yaml.safe_dump(spec, sort_keys=False))
    done = subprocess.run(
        [PROMTOOL, "test", "rules", "test.yml"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
