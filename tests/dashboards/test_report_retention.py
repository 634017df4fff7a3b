"""Issue 30 item 2: a report that does not move as data ages.

Its coverage line shrank from "2.7 h of 24 h" to "17 min of 24 h" while the line below it
said "compared over the same 3.4 h", and verdicts flipped between readings 18 minutes apart.
Here a window inside retention reads the same twice as older data is pruned, and a window
reaching past the kept serving counters (or the ledger's minute detail) is refused.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cost.models import LedgerHour
from dashboards.selectors.report import ReportRefused, report_decision
from telemetry.models import Sample
from tests.cost.cost_data import write_cluster
from tests.dashboards.test_report_decision import sides  # noqa: F401 (fixture)


def _reading(decision) -> dict:
    """Everything a reader would quote from the report."""
    tco = decision.comparison.tco
    return {
        "compared": decision.compared,
        "compared_seconds": decision.compared_seconds,
        "verdicts": [
            (v.cluster, v.service, v.target, v.measured_seconds, v.met) for v in decision.verdicts
        ],
        "samples": (decision.base.samples.mean, decision.uni.samples.mean),
        "ttft": (decision.uni.ttft.seconds, decision.uni.ttft.requests),
        "per_hour": (decision.base.cost.asset.per_hour, decision.uni.cost.asset.per_hour),
        "saving": tco.saving_per_month if tco else None,
        "recommendation": decision.recommendation.outcome,
    }


@pytest.fixture
def short_retention(settings):
    # Serving counters (raw non-accelerator samples) kept 2 h: the floor, as in a small demo.
    settings.TELEMETRY_RETENTION = {**settings.TELEMETRY_RETENTION, "raw_other_hours": 2}


def test_a_window_within_retention_reads_the_same_as_older_data_ages_out(
    sides,  # noqa: F811
    short_retention,
):
    now = datetime.now(tz=UTC)
    start, end = now - timedelta(minutes=40), now
    first = report_decision(sides["base"], sides["uni"], start, end, now=now)
    assert first.verdicts and first.compared is not None
    # 18 minutes later the oldest data has aged out (what retention prunes by then: the
    # baseline's first minutes and anything older) — none of it inside the window.
    later = now + timedelta(minutes=18)
    pruned, _ = Sample.objects.filter(ts__lt=start).delete()
    assert pruned > 0
    again = report_decision(sides["base"], sides["uni"], start, end, now=later)
    assert _reading(again) == _reading(first)


def test_a_window_beyond_the_kept_serving_counters_is_refused_and_writes_nothing(
    sides,  # noqa: F811
    short_retention,
    client_as,
):
    client = client_as("operator")
    hours, samples = LedgerHour.objects.count(), Sample.objects.count()
    query = f"baseline={sides['base'].pk}&unified={sides['uni'].pk}&range=24h"
    page = client.get(f"/report/?{query}")
    text = page.content.decode()
    assert page.status_code == 400
    assert "Serving counters are kept for 2 h (TELEMETRY_RAW_OTHER_HOURS)" in text
    assert "Choose a window of at most 2 h" in text
    # Nothing computed on the part that is left: no coverage, verdict or recommendation.
    assert "decision" not in page.context
    assert "data-compared" not in text and "data-verdict-summary" not in text
    assert client.get(f"/report/?{query}&format=csv&figure=ttft").status_code == 400
    api = client.get("/api/v1/report/?baseline=legacy&unified=uni&range=24h")
    assert api.status_code == 400 and "kept for 2 h" in api.json()["errors"]["window"][0]
    assert (LedgerHour.objects.count(), Sample.objects.count()) == (hours, samples)
    # The window it names instead is answered.
    assert client.get(f"/report/?baseline={sides['base'].pk}&unified={sides['uni'].pk}&range=1h")
    answered = client.get("/api/v1/report/?baseline=legacy&unified=uni&range=1h")
    assert answered.status_code == 200 and answered.json()["coverage"]["compared_seconds"] > 0
    # With no window asked, the default is the longest one retention covers, not a refusal.
    default = client.get("/api/v1/report/?baseline=legacy&unified=uni")
    assert default.status_code == 200 and default.json()["window"]["preset"] == "1h"


def test_hours_the_ledger_can_no_longer_bill_refuse_the_report_in_its_words(
    sides,  # noqa: F811
    settings,
):
    # Serving counters kept 6 h (the demo's), minute detail 2 h, and three hours of baseline
    # data on both sides that nobody closed into the ledger: the cost figures of the compared
    # window cannot be read for them.
    settings.TELEMETRY_RETENTION = {
        **settings.TELEMETRY_RETENTION,
        "raw_other_hours": 6,
        "raw_accelerator_hours": 1,
        "rollup_minute_days": 0,
        "frame_minute_hours": 2,
    }
    for side in ("base", "uni"):
        write_cluster(sides[side], {"cluster_utilization_allocated_ratio": [0.5] * 180})
    now = datetime.now(tz=UTC)
    with pytest.raises(ReportRefused, match="which the ledger never closed"):
        report_decision(sides["base"], sides["uni"], now - timedelta(hours=4), now, now=now)
