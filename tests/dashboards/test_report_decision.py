"""Issue 24: a validation report that decides.

Its "24 h" held 14 minutes of data without saying so, its ratios moved between readings
(each side averaged over whatever it had), it gave no verdict and no money, and its ablation
came from an unrelated 256-card what-if. Here the baseline reports for an hour (throughput
100 samples/s, then 10 for the last 14 minutes), the unified cluster for the last 14 minutes.
"""

from __future__ import annotations

import pytest

from cost.models import CostAssumptions
from dashboards.selectors.report_decision import coverage, overlap_seconds
from inventory.models import Cluster
from telemetry.models import Entity
from telemetry.read.local.histograms import histogram_quantile
from tests.cost.cost_data import add_workload, make_cluster, minutes_ago, write_cluster
from tests.cost.test_cost_page import INPUTS
from tests.dashboards.serving_data import buckets_of, write_requests


def _service(cluster, tenant, name, *, ttft_ms, tpot_ms, ttft, tpot, minutes=14):
    """A service whose requests (ten a minute) all take ``ttft`` / ``tpot``: its serving
    histograms as the twin writes them."""
    w = add_workload(cluster, tenant, name, "inference", 1, None)
    w.slo_ttft_ms, w.slo_tpot_ms = ttft_ms, tpot_ms
    w.save(update_fields=["slo_ttft_ms", "slo_tpot_ms"])
    entity = Entity.objects.get(workload=w)
    step = {"ttft": [ttft] * 10, "tpot": [tpot] * 10}
    write_requests(entity, [(minutes_ago(i), step) for i in range(minutes, 0, -1)])


@pytest.fixture
def sides(db, tenants):
    CostAssumptions.objects.create(**INPUTS)
    base = make_cluster("legacy", Cluster.Kind.LEGACY, cards=16)
    uni = make_cluster("uni", Cluster.Kind.UNIFIED, cards=16)
    write_cluster(
        base,
        {
            "cluster_training_samples_per_second": [100.0] * 46 + [10.0] * 14,
            "cluster_utilization_allocated_ratio": [0.5] * 60,
        },
    )
    write_cluster(
        uni,
        {
            "cluster_training_samples_per_second": [20.0] * 14,
            "cluster_utilization_allocated_ratio": [0.8] * 14,
            "cluster_power_watts": [8000.0] * 14,
        },
    )
    _service(uni, tenants["acme"], "chat", ttft_ms=1000, tpot_ms=50, ttft=0.5, tpot=0.03)
    _service(uni, tenants["acme"], "code", ttft_ms=200, tpot_ms=50, ttft=1.5, tpot=0.03)
    return {"base": base, "uni": uni}


def _report(client, sides, extra: str = "") -> tuple[str, dict]:
    url = f"/report/?baseline={sides['base'].pk}&unified={sides['uni'].pk}&range=24h{extra}"
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode(), response.context


def test_the_report_states_one_coverage_the_overlap_and_compares_equal_windows(sides, client_as):
    page, context = _report(client_as("operator"), sides)
    decision = context["decision"]
    # One statement: the overlap of both sides' data (the unified side's 14 minutes), never
    # more than either side's data covers; no per-side line that could disagree with it.
    lo, hi = decision.compared
    each = [coverage(sides[k], lo, hi) for k in ("base", "uni")]
    assert decision.compared_seconds == overlap_seconds(*each, lo=lo, hi=hi)
    assert 13 * 60 <= decision.compared_seconds <= min(c.covered_seconds for c in each)
    assert page.count("data-compared") == 1 and "data-coverage" not in page
    assert "Compared over 14 min of the asked 24 h" in page
    # The baseline is read over the same minutes as the unified side: 10 samples/s, not the
    # hour's mean of 79; the ratio is 20 / 10.
    assert context["base"].samples.mean == pytest.approx(10.0, abs=2.0)
    assert context["samples_ratio"] == pytest.approx(2.0, rel=0.2)


def test_two_readings_of_the_same_minute_give_the_same_figures(sides, client_as):
    client = client_as("operator")
    first = client.get("/api/v1/report/?baseline=legacy&unified=uni&range=24h").json()
    again = client.get("/api/v1/report/?baseline=legacy&unified=uni&range=24h").json()
    keys = ("coverage", "verdicts", "money")
    assert {k: first[k] for k in keys} == {k: again[k] for k in keys}
    assert (
        first["baseline"]["training_samples_per_second"]
        == (again["baseline"]["training_samples_per_second"])
    )


def test_one_verdict_per_slo_and_target_with_the_measured_figure(sides, client_as):
    page, context = _report(client_as("operator"), sides)
    verdicts = {(v.service, v.target): v for v in context["decision"].verdicts}
    assert verdicts[("chat", "ttft")].met is True
    assert verdicts[("code", "ttft")].met is False
    # The P99 of its requests from the merged buckets: 1.5 s requests, bucket 1-2.5 s.
    expected = histogram_quantile(0.99, buckets_of("serving_ttft_seconds", [1.5] * 130))
    assert verdicts[("code", "ttft")].measured_seconds == pytest.approx(expected)
    assert 1.0 < expected <= 2.5
    assert verdicts[("code", "tpot")].met is True
    assert len(verdicts) == 4
    assert "3 of 4 targets met" in page
    row = page[page.index('data-pair="code/ttft"') :]
    row = row[: row.index("</tr>")]
    assert "TTFT P99" in row and "200 ms" in row and "not met" in row
    assert "not on this cluster" in row  # the legacy side has no such service
    data = client_as("operator").get("/api/v1/report/?baseline=legacy&unified=uni").json()
    assert {(v["service"], v["target"], v["met"]) for v in data["verdicts"]} == {
        ("chat", "ttft", True),
        ("chat", "tpot", True),
        ("code", "ttft", False),
        ("code", "tpot", True),
    }


def test_the_report_gives_the_money_per_month_and_payback_with_inputs(sides, client_as):
    page, context = _report(client_as("operator"), sides)
    tco = context["decision"].comparison.tco
    # Same 16-card hardware priced at the unified inputs; allocated 0.8 vs 0.5.
    assert tco.unified_cards_needed == pytest.approx(16.0)
    assert tco.split_cards_needed == pytest.approx(16 * 0.8 / 0.5)
    saving = page[page.index("data-saving") :]
    assert "USD" in saving[:200]
    assert "data-payback" in page and "months" in page[page.index("data-payback") :][:300]
    assert "allocated utilization uni 80%" in page and "legacy 50%" in page
    money = client_as("operator").get("/api/v1/report/?baseline=legacy&unified=uni").json()
    assert money["money"]["saving_per_month"] == pytest.approx(tco.saving_per_month)
    assert money["money"]["inputs"]["migration_cost"] == 12_000.0


def test_an_unrelated_what_if_is_not_shown_as_the_ablation(sides, client_as, users):
    from simulation.models import WhatIfRun

    rows = [{"name": "split", "utilization_allocated_mean": 0.5}, {"name": "unified"}]
    WhatIfRun.objects.create(
        cards=256, hardware="ascend-950dt", hours=1, status="done",
        result={"ablation": rows}, created_by=users["operator"],
    )  # fmt: skip
    page, context = _report(client_as("operator"), sides)
    assert context["ablation"] is None
    assert "No ablation of these clusters exists" in page


def test_the_ablation_of_the_same_clusters_shows_its_spread_over_seeds(sides, client_as, users):
    from simulation.models import WhatIfRun

    for seed, util in ((7, 0.70), (8, 0.74)):
        WhatIfRun.objects.create(
            cards=16, hardware="hw-uni", hours=1, seed=seed, status="done",
            result={"ablation": [
                {"name": "split", "utilization_allocated_mean": 0.5},
                {"name": "unified", "utilization_allocated_mean": util},
            ]},
            created_by=users["operator"],
        )  # fmt: skip
    page, context = _report(client_as("operator"), sides)
    assert context["ablation"]["seeds"] == [7, 8]
    assert "Spread over 2 runs (seeds 7, 8)" in page
    unified = context["ablation"]["rows"][-1]["figures"]["utilization_allocated_mean"]
    assert (unified["low"], unified["high"]) == (0.70, 0.74)
    assert "70%–74%" in page


def test_a_single_run_says_no_spread_can_be_given(sides, client_as, users):
    from simulation.models import WhatIfRun

    WhatIfRun.objects.create(
        cards=16, hardware="hw-uni", hours=1, seed=7, status="done",
        result={"ablation": [{"name": "split"}, {"name": "unified"}]},
        created_by=users["operator"],
    )  # fmt: skip
    page, _ = _report(client_as("operator"), sides)
    assert "Only one run exists (seed 7)" in page


def test_clusters_without_a_common_span_are_not_compared(db, tenants, client_as):
    base = make_cluster("legacy", Cluster.Kind.LEGACY, cards=4)
    uni = make_cluster("uni", Cluster.Kind.UNIFIED, cards=4)
    write_cluster(base, {"cluster_utilization_allocated_ratio": [0.5] * 3})
    page, context = _report(client_as("operator"), {"base": base, "uni": uni})
    assert context["decision"].compared is None
    assert "no data in a common span" in page and context["samples_ratio"] is None
