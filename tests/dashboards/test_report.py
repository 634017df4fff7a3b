"""The validation report: figures equal what the selectors compute, and "no data" is honest."""

from __future__ import annotations

import csv
import io

import pytest

from dashboards.selectors.report_services import cluster_serving
from inventory.models import Cluster, Workload
from telemetry.read import cluster_stat
from telemetry.read.local.histograms import histogram_quantile
from tests.access import ApiAccessCases, PageAccessCases
from tests.cost.cost_data import (
    add_workload,
    make_cluster,
    metric,
    minutes_ago,
    write_cluster,
)
from tests.dashboards.serving_data import FIGURE, buckets_of, write_requests

# The requests of one minute, per service and side (seconds).
LEGACY_A = {"ttft": [0.03] * 95 + [0.3] * 5, "tpot": [0.02] * 100, "e2e": [1.2] * 100}
UNI_A = {"ttft": [0.03] * 90 + [0.9] * 10, "tpot": [0.02] * 100, "e2e": [1.2] * 100}
UNI_B = {"ttft": [0.03] * 30, "tpot": [0.06] * 30, "e2e": [0.5] * 30}


def merged_p99(figure: str, *steps: dict) -> float:
    """What ``histogram_quantile(0.99, sum by (le) (…))`` answers for these requests."""
    histogram = FIGURE[figure]
    return histogram_quantile(
        0.99, buckets_of(histogram, [x for step in steps for x in step[figure]])
    )


@pytest.fixture
def pair(db, tenants):
    from django.db import transaction

    from telemetry.models import Entity
    from telemetry.receivers.twin import samples_write

    base = make_cluster("legacy", Cluster.Kind.LEGACY, cards=8)
    uni = make_cluster("uni", Cluster.Kind.UNIFIED, cards=16)
    write_cluster(
        uni,
        {
            "cluster_training_samples_per_second": [100.0, 200.0, 300.0],
            "cluster_utilization_allocated_ratio": [0.8, 0.9, 1.0],
            "cluster_hbm_live_ratio": [0.5, 0.7, 0.6],
        },
    )
    write_cluster(base, {"cluster_utilization_allocated_ratio": [0.4, 0.6]})
    # svc-a on both sides (TTFT target 500 ms), svc-b on the unified side only: histograms
    # written a minute ago (the compared window is the legacy side's last two minutes).
    for cluster, name, requests in (
        (base, "svc-a", LEGACY_A),
        (uni, "svc-a", UNI_A),
        (uni, "svc-b", UNI_B),
    ):
        w = add_workload(cluster, tenants["acme"], name, "inference", 1, [2.0, 2.0])
        Workload.objects.filter(pk=w.pk).update(slo_ttft_ms=500 if name == "svc-a" else None)
        write_requests(
            Entity.objects.get(workload=w), [(minutes_ago(2), {}), (minutes_ago(1), requests)]
        )
    # svc-c has only stored per-step P99s: an approximation, labelled and never judged.
    w = add_workload(uni, tenants["acme"], "svc-c", "inference", 1, None)
    Workload.objects.filter(pk=w.pk).update(slo_p99_ms=100)
    entity = Entity.objects.get(workload=w)
    with transaction.atomic():
        samples_write(
            [
                (
                    metric("inference_latency_p99_seconds", "workload").pk,
                    entity.pk,
                    minutes_ago(i),
                    0.05,
                )
                for i in (1, 2)
            ]
        )
    return {"base": base, "uni": uni}


class TestReportPageAccess(PageAccessCases):
    url = "/report/"
    allowed_roles = ("operator", "approver")


class TestReportApiAccess(ApiAccessCases):
    url = "/api/v1/report/?baseline=legacy&unified=uni"
    allowed_roles = ("operator", "approver")

    @pytest.fixture(autouse=True)
    def _pair(self, pair):
        return pair


def test_figures_equal_the_selectors_and_missing_data_is_said(pair, client_as):
    url = f"/report/?baseline={pair['base'].pk}&unified={pair['uni'].pk}"
    response = client_as("operator").get(url)
    page = response.content.decode()
    uni = response.context["uni"]
    # Compared over the span both clusters have data: the legacy side's two minutes, so the
    # unified side's oldest value (three minutes ago) is outside it.
    lo, hi = response.context["decision"].compared
    expected = cluster_stat(pair["uni"], "cluster_training_samples_per_second", lo, hi)
    assert uni.samples.mean == pytest.approx(expected.mean) == pytest.approx(250.0)
    assert uni.samples.count == 2
    assert "250.0" in page and "mean of 2 stored values" in page
    # The headline P99: the percentile of every request of both services (merged buckets).
    assert uni.p99.exact and uni.p99.seconds == pytest.approx(merged_p99("e2e", UNI_A, UNI_B))
    assert uni.ttft.seconds == pytest.approx(merged_p99("ttft", UNI_A, UNI_B))
    assert uni.ttft.requests == 130
    # the legacy cluster stored no throughput or HBM: said, not shown as a number
    assert page.count("No data for legacy in this window.") == 2
    assert response.context["samples_ratio"] is None
    assert uni.hbm.mean == pytest.approx(0.65)  # 0.7 and 0.6: the compared two minutes
    assert 'data-figure="report-curve"' in page and "report.css" in page


def test_a_percentile_over_no_requests_says_so(pair, client_as):
    from datetime import UTC, datetime, timedelta

    now = datetime.now(tz=UTC)
    earlier = cluster_serving(pair["uni"], now - timedelta(hours=3), now - timedelta(hours=2))
    assert earlier.pooled["ttft"]["p99"].seconds is None
    assert earlier.sides["svc-a"].verdicts["ttft"].met is None  # no verdict over no requests
    assert cluster_serving(pair["uni"], now - timedelta(minutes=3), now).requests == 130


def test_csv_gives_the_data_behind_each_figure(pair, client_as):
    client = client_as("approver")
    base = f"/report/?baseline={pair['base'].pk}&unified={pair['uni'].pk}&range=6h&format=csv"
    rows = list(
        csv.DictReader(io.StringIO(client.get(base + "&figure=utilization").content.decode()))
    )
    allocated = [r for r in rows if r["metric"] == "cluster_utilization_allocated_ratio"]
    # the compared window: the two minutes both clusters have data
    assert sorted(float(r["mean"]) for r in allocated if r["cluster"] == "uni") == [0.9, 1.0]
    assert len([r for r in allocated if r["cluster"] == "legacy"]) == 2
    p99 = list(csv.DictReader(io.StringIO(client.get(base + "&figure=p99").content.decode())))
    uni = {r["workload"]: r for r in p99 if r["cluster"] == "uni"}
    assert float(uni["svc-a"]["p99_seconds"]) == pytest.approx(merged_p99("e2e", UNI_A))
    assert float(uni["svc-a"]["requests"]) == 100
    assert uni["svc-c"]["percentile_of_requests"] == "False"  # the approximation, marked


def test_report_api_returns_the_same_figures(pair, client_as):
    data = client_as("operator").get("/api/v1/report/?baseline=legacy&unified=uni").json()
    assert data["unified"]["training_samples_per_second"]["mean"] == pytest.approx(250.0)
    assert data["unified"]["inference_p99_seconds"]["value"] == pytest.approx(
        merged_p99("e2e", UNI_A, UNI_B)
    )
    assert data["unified"]["inference_p99_seconds"]["exact"] is True
    assert data["baseline"]["training_samples_per_second"] is None
    bad = client_as("operator").get("/api/v1/report/?baseline=nope&unified=uni")
    assert bad.status_code == 400 and "nope" in bad.json()["errors"]["baseline"][0]


def test_a_bad_window_is_a_clear_400(pair, client_as):
    response = client_as("operator").get("/report/?range=5y")
    assert response.status_code == 400 and "Unknown range" in response.content.decode()


def test_the_report_leads_with_tpot_and_compares_unequal_clusters_per_card(pair, client_as):
    url = f"/report/?baseline={pair['base'].pk}&unified={pair['uni'].pk}"
    page = client_as("operator").get(url).content.decode()
    assert "TPOT P99 (time per output token)" in page and "End-to-end P99 (secondary)" in page
    assert "legacy has 8 cards, uni has 16" in page and "compared per card" in page
    data = client_as("operator").get("/api/v1/report/?baseline=legacy&unified=uni").json()
    uni = data["unified"]
    assert uni["inference_tpot_p99_seconds"]["value"] == pytest.approx(
        merged_p99("tpot", UNI_A, UNI_B)
    )
    assert data["baseline"]["inference_ttft_p99_seconds"]["requests"] == 100
    # no training cards reported: the cluster's cards divide (stated on the page)
    assert uni["training_samples_per_second_per_card"] == pytest.approx(250.0 / 16)
    assert data["ablation"] is None
    assert "No ablation of these clusters exists" in page


def test_the_report_says_which_mechanism_contributed_what_from_the_ablation(pair, client_as, users):
    from simulation.models import WhatIfRun

    rows = [
        {"name": n, "utilization_allocated_mean": u, "training_pflops_mean": p, "tpot_p99_ms": t}
        for n, u, p, t in (
            ("split", 0.50, 10.0, 40.0),
            ("+time-sharing", 0.60, 12.0, 41.0),
            ("+preemption/elastic", 0.70, 15.0, 41.0),
            ("+pooled memory", 0.70, 15.0, 38.0),
            ("unified", 0.75, 16.5, 38.0),
        )
    ]
    WhatIfRun.objects.create(
        cards=16,  # the unified cluster's cards and accelerator: an ablation of these clusters
        hardware="hw-uni",
        hours=1,
        status="done",
        result={"summary": {}, "ablation": rows},
        created_by=users["operator"],
    )
    data = client_as("operator").get("/api/v1/report/?baseline=legacy&unified=uni").json()
    ablation = data["ablation"]
    assert [r["name"] for r in ablation["rows"]][-1] == "unified" and ablation["cards"] == 16
    elastic = ablation["rows"][2]["figures"]
    assert elastic["training_pflops_mean"]["value"] == 15.0
    assert elastic["training_pflops_mean"]["delta"] == pytest.approx(3.0)
    assert elastic["ttft_p99_ms"]["value"] is None and elastic["ttft_p99_ms"]["delta"] is None
    url = f"/report/?baseline={pair['base'].pk}&unified={pair['uni'].pk}"
    page = client_as("operator").get(url).content.decode()
    assert "Which mechanism contributed what" in page and "+3.0" in page


def test_report_cost_csv_states_the_load_each_cost_per_token_was_measured_at(pair, client_as):
    write_cluster(pair["uni"], {"cluster_inference_tokens_per_second": [1000.0, 1000.0, 1000.0]})
    url = (
        f"/report/?baseline={pair['base'].pk}&unified={pair['uni'].pk}&range=6h"
        "&format=csv&figure=cost"
    )
    rows = list(csv.DictReader(io.StringIO(client_as("approver").get(url).content.decode())))
    uni = {r["figure"]: r["value"] for r in rows if r["cluster"] == "uni"}
    legacy = {r["figure"]: r["value"] for r in rows if r["cluster"] == "legacy"}
    held = float(uni["inference_cards_held_mean"])
    assert 0 < held <= 4.0  # svc-a and svc-b hold 2 cards each where they report
    assert float(uni["tokens_per_second_per_inference_card"]) == pytest.approx(1000.0 / held)
    # The serving cards' cost over the tokens they served: held × cost per card-hour (16 cards).
    per_card_hour = float(uni["asset_per_hour"]) / 16
    assert float(uni["cost_per_1m_tokens"]) == pytest.approx(held * per_card_hour / 3.6)
    # legacy served no tokens: no load, no per-token figure, not a made-up zero.
    assert legacy["tokens_per_second_per_inference_card"] == ""
    assert legacy["cost_per_1m_tokens"] == ""
