"""The report's serving figures (issue 30 items 1 and 4): a P99 is a percentile of the
window's requests, each service's source and target sit side by side, and the top line
decides migrate / do not / not enough data on three stated figures."""

from __future__ import annotations

import pytest

from dashboards.selectors.report_recommend import DO_NOT, MIGRATE, NOT_ENOUGH, recommend
from dashboards.selectors.report_services import (
    Percentile,
    ServicePair,
    ServiceSide,
    Verdict,
    cluster_serving,
)
from inventory.models import Cluster
from telemetry.models import Entity
from telemetry.read.local.histograms import histogram_quantile
from tests.cost.cost_data import add_workload, make_cluster, metric, minutes_ago
from tests.dashboards.serving_data import buckets_of, write_requests
from tests.dashboards.test_report import LEGACY_A, UNI_A, merged_p99, pair  # noqa: F401


@pytest.mark.django_db
def test_a_merged_percentile_is_not_the_mean_of_per_step_p99s(tenants):
    from datetime import UTC, datetime, timedelta

    from django.db import transaction

    from telemetry.receivers.twin import samples_write

    cluster = make_cluster("one", Cluster.Kind.UNIFIED, cards=8)
    w = add_workload(cluster, tenants["acme"], "chat", "inference", 1, None)
    entity = Entity.objects.get(workload=w)
    # Three calm minutes and one with a burst of slow first tokens.
    calm = {"ttft": [0.03] * 200}
    burst = {"ttft": [0.03] * 180 + [3.0] * 20}
    steps = [calm, calm, calm, burst]
    write_requests(entity, [(minutes_ago(4 - i), step) for i, step in enumerate(steps)])
    # Each minute's own P99 as the twin stores it per step, and their mean.
    per_step = [
        histogram_quantile(0.99, buckets_of("serving_ttft_seconds", s["ttft"])) for s in steps
    ]
    with transaction.atomic():
        samples_write(
            [
                (
                    metric("inference_ttft_p99_seconds", "workload").pk,
                    entity.pk,
                    minutes_ago(4 - i),
                    v,
                )
                for i, v in enumerate(per_step)
            ]
        )
    now = datetime.now(tz=UTC)
    found = cluster_serving(cluster, now - timedelta(minutes=6), now)
    p99 = found.sides["chat"].p99("ttft")
    pooled = [x for s in steps for x in s["ttft"]]
    assert p99.exact and p99.requests == 800
    assert p99.seconds == pytest.approx(
        histogram_quantile(0.99, buckets_of("serving_ttft_seconds", pooled))
    )
    mean_of_steps = sum(per_step) / len(per_step)
    # 20 of 800 requests (2.5 %) took 3 s: the P99 is in that tail; the mean of the four
    # per-step P99s (one in the 2.5-5 s bucket, three of 40 ms) is not: it reads ~1.2 s.
    assert 2.5 < p99.seconds <= 5.0
    assert mean_of_steps < 1.5
    assert found.pooled["ttft"]["p99"].seconds == pytest.approx(p99.seconds)


def test_the_verdict_table_sets_each_service_side_by_side(pair, client_as):  # noqa: F811
    url = f"/report/?baseline={pair['base'].pk}&unified={pair['uni'].pk}"
    response = client_as("operator").get(url)
    page = response.content.decode()
    pairs = {p.service: p for p in response.context["decision"].pairs}
    assert list(pairs) == ["svc-a", "svc-b", "svc-c"]
    a = pairs["svc-a"]
    [(key, before, after)] = a.rows
    assert key == "ttft" and before.cluster == "legacy" and after.cluster == "uni"
    # Same service, same window, same metric: met on the source, missed on the target.
    assert before.measured_seconds == pytest.approx(merged_p99("ttft", LEGACY_A))
    assert after.measured_seconds == pytest.approx(merged_p99("ttft", UNI_A))
    assert before.measured_seconds <= 0.5 < after.measured_seconds
    assert before.met is True and after.met is False
    assert a.source.cards == a.target.cards == 2.0  # size stated on each side
    assert a.source.requests == a.target.requests == 100
    assert 'data-pair="svc-a/ttft"' in page and "not on this cluster" in page
    # svc-c's per-step mean is shown as the approximation and given no verdict.
    [(_, none, approx)] = pairs["svc-c"].rows
    assert none is None and approx.met is None and not approx.measured.exact
    assert "approximation: no histogram in this window; not judged" in page
    # No cost per 1M tokens on either side: the top line says there is not enough data.
    assert response.context["decision"].recommendation.outcome == NOT_ENOUGH
    assert 'data-recommendation="not_enough_data"' in page


def _pair(before_s: float | None, after_s: float | None, target: float = 0.5) -> ServicePair:
    def side(cluster: str, seconds: float | None) -> ServiceSide:
        p = Percentile(seconds, 100.0 if seconds is not None else 0.0, exact=True)
        s = ServiceSide(cluster, "chat", 4.0, 100.0, 1.0, 500.0, {"ttft": {"p99": p}})
        s.verdicts["ttft"] = Verdict(cluster, "chat", "ttft", target, p)
        return s

    return ServicePair("chat", side("src", before_s), side("dst", after_s))


def test_the_recommendation_migrates_only_when_all_three_figures_agree():
    ok = recommend(
        compared=True,
        pairs=[_pair(0.3, 0.4)],
        source_cost_per_million=2.0,
        target_cost_per_million=1.0,
        saving_per_month=1000.0,
        payback_months=6.0,
    )
    assert ok.outcome == MIGRATE and ok.cost_ratio == pytest.approx(0.5)
    assert (ok.judged, ok.source_met, ok.target_met, ok.regressions) == (1, 1, 1, 0)
    slower = recommend(
        compared=True,
        pairs=[_pair(0.3, 0.6)],
        source_cost_per_million=2.0,
        target_cost_per_million=1.0,
        saving_per_month=1000.0,
    )
    assert slower.outcome == DO_NOT and slower.regressions == 1
    dearer = recommend(
        compared=True,
        pairs=[_pair(0.3, 0.4)],
        source_cost_per_million=1.0,
        target_cost_per_million=3.0,
        saving_per_month=-10.0,
    )
    assert dearer.outcome == DO_NOT and len(dearer.reasons) == 2


def test_the_recommendation_says_when_there_is_not_enough_data():
    # No requests on the target: nothing judged on both sides, so no decision.
    idle = recommend(
        compared=True,
        pairs=[_pair(0.3, None)],
        source_cost_per_million=2.0,
        target_cost_per_million=1.0,
        saving_per_month=1000.0,
    )
    assert idle.outcome == NOT_ENOUGH and idle.judged == 0
    nothing = recommend(
        compared=False,
        pairs=[],
        source_cost_per_million=None,
        target_cost_per_million=None,
        saving_per_month=None,
    )
    assert nothing.outcome == NOT_ENOUGH and len(nothing.reasons) == 3
