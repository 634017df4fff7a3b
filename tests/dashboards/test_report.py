"""The validation report: figures equal what the selectors compute, and "no data" is honest."""

from __future__ import annotations

import csv
import io

import pytest

from dashboards.selectors.report import inference_p99
from inventory.models import Cluster
from telemetry.read import cluster_stat
from tests.access import ApiAccessCases, PageAccessCases
from tests.cost.cost_data import (
    add_workload,
    make_cluster,
    metric,
    minutes_ago,
    write_cluster,
)


@pytest.fixture
def pair(db, tenants):
    from django.db import transaction

    from telemetry.ingest.twin import samples_write
    from telemetry.models import Entity

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
    # two services on the unified cluster: P99 0.2 s at 10 req/s and 1.0 s at 30 req/s
    # and TPOT P99 20 ms / 60 ms on the same services
    for name, p99, rate in (("svc-a", 0.2, 10.0), ("svc-b", 1.0, 30.0)):
        w = add_workload(uni, tenants["acme"], name, "inference", 1, None)
        entity = Entity.objects.get(workload=w)
        rows = [
            (metric("inference_latency_p99_seconds", "workload").pk, entity.pk, minutes_ago(i), p99)
            for i in (1, 2)
        ]
        rows += [
            (
                metric("inference_tpot_p99_seconds", "workload").pk,
                entity.pk,
                minutes_ago(i),
                p99 / 10 if name == "svc-a" else 0.06,
            )
            for i in (1, 2)
        ]
        rows += [
            (
                metric("inference_request_rate_per_second", "workload").pk,
                entity.pk,
                minutes_ago(i),
                rate,
            )
            for i in (1, 2)
        ]
        with transaction.atomic():
            samples_write(rows)
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
    # P99: request-weighted (0.2×10 + 1.0×30) / 40 = 0.8 s
    assert uni.p99.value_seconds == pytest.approx(0.8)
    assert "800 ms" in page
    # the legacy cluster stored no throughput, TTFT, TPOT, end-to-end or HBM: said, not
    # shown as a number
    assert page.count("No data for legacy in this window.") == 5
    assert response.context["samples_ratio"] is None
    assert uni.hbm.mean == pytest.approx(0.65)  # 0.7 and 0.6: the compared two minutes
    assert 'data-figure="report-curve"' in page and "report.css" in page


def test_p99_selector_reads_only_the_window(pair):
    from datetime import UTC, datetime, timedelta

    now = datetime.now(tz=UTC)
    assert inference_p99(pair["uni"], now - timedelta(minutes=1, seconds=30), now).values == 2
    assert inference_p99(pair["uni"], now - timedelta(hours=3), now - timedelta(hours=2)) is None


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
    assert [(r["workload"], float(r["p99_seconds_mean"])) for r in p99] == [
        ("svc-a", 0.2),
        ("svc-b", 1.0),
    ]


def test_report_api_returns_the_same_figures(pair, client_as):
    data = client_as("operator").get("/api/v1/report/?baseline=legacy&unified=uni").json()
    assert data["unified"]["training_samples_per_second"]["mean"] == pytest.approx(250.0)
    assert data["unified"]["inference_p99_seconds"]["value"] == pytest.approx(0.8)
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
    # request-weighted: (0.02 × 10 + 0.06 × 30) / 40 = 0.05 s
    assert "50 ms" in page
    assert "legacy has 8 cards, uni has 16" in page and "compared per card" in page
    data = client_as("operator").get("/api/v1/report/?baseline=legacy&unified=uni").json()
    uni = data["unified"]
    assert uni["inference_tpot_p99_seconds"]["value"] == pytest.approx(0.05)
    assert uni["inference_ttft_p99_seconds"] is None  # no TTFT stored: said, not invented
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
