"""What-if runs: the form, the background task with progress, the page, CSV and API."""

from __future__ import annotations

import csv
import io
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from simulation.models import WhatIfRun
from simulation.services import whatif_run as whatif_service
from simulation.tasks import run_whatif
from tests.access import ApiAccessCases, PageAccessCases

SMALL = {"cards": 64, "hardware": "h100-sxm", "hours": 1, "seed": 3, "trace_kind": ""}


class TestWhatIfPageAccess(PageAccessCases):
    url = "/whatif/"
    allowed_roles = ("operator",)


class TestWhatIfApiAccess(ApiAccessCases):
    url = "/api/v1/whatif/"
    allowed_roles = ("operator", "approver")


@pytest.fixture
def small_run(users) -> WhatIfRun:
    """One seed: the side-by-side columns are exactly the ablation's ends."""
    return WhatIfRun.objects.create(
        cards=64, hardware="h100-sxm", hours=1, seed=3, seeds=1, created_by=users["operator"]
    )


@pytest.fixture
def seeded_run(users) -> WhatIfRun:
    return WhatIfRun.objects.create(
        cards=64, hardware="h100-sxm", hours=1, seed=3, seeds=3, created_by=users["operator"]
    )


@pytest.mark.django_db
def test_a_run_over_seeds_shows_each_figure_with_its_spread(seeded_run, client_as):
    from simulation.engine import default_scenario
    from simulation.engine.compare import run_policy

    run = whatif_service.whatif_execute(run_id=seeded_run.pk)
    assert run.status == "done", run.error
    assert run.result["seeds"] == [3, 4, 5]
    spread = run.result["spread"]
    # Each seed's own split run, as ``compare`` runs it: the mean and range are theirs.
    own = [
        run_policy(default_scenario(64, s, hardware="h100-sxm", hours=1), "split", 1)
        for s in (3, 4, 5)
    ]
    st = spread["split"]["ttft_p99_ms"]
    values = [o["ttft_p99_ms"] for o in own]
    assert st["n"] == 3 and st["min"] == pytest.approx(min(values))
    assert st["max"] == pytest.approx(max(values))
    assert run.result["summary"]["split"]["ttft_p99_ms"] == pytest.approx(sum(values) / 3)
    d = spread["unified_minus_split"]["utilization_busy_mean"]
    assert d["min"] <= d["mean"] <= d["max"] and d["ci95_low"] <= d["mean"] <= d["ci95_high"]
    # The headline is engine.headline over the same per-seed runs compare would make.
    from simulation.engine.spread import stats
    from simulation.whatif_views import _gain

    h = run.result["headline"]
    assert h["goodput"]["split"] == pytest.approx(
        stats([o["goodput_pflop_per_card_hour"] for o in own])
    )
    assert h["goodput"]["gain"]["n"] == 3 and h["goodput"]["gain"]["ci95_low"] is not None
    client = client_as("operator")
    page = client.get(f"/whatif/{run.pk}/").content.decode()
    assert (
        'data-headline="goodput"' in page and _gain(h["goodput"]["gain"]["mean"], "ratio") in page
    )
    assert "mean over 3 seeds" in page and "unified − split" in page
    assert page.count('class="hint spread"') >= 3 * 10
    rows = list(
        csv.DictReader(io.StringIO(client.get(f"/whatif/{run.pk}/?format=csv").content.decode()))
    )
    busy = next(r for r in rows if r["metric"] == "utilization_busy_mean")
    assert float(busy["unified_minus_split_min"]) <= float(busy["unified_minus_split"])
    assert busy["seeds"] == "3 4 5"


@pytest.mark.django_db
def test_a_running_run_says_which_seed_and_policy_it_is_on(seeded_run, client_as):
    WhatIfRun.objects.filter(pk=seeded_run.pk).update(status="running", progress=0.8)
    page = client_as("operator").get(f"/whatif/{seeded_run.pk}/?partial=1").content.decode()
    # 5 ablation runs then 2 per further seed: 80% of 9 runs is the 8th, seed 5's split.
    assert "seed 3 of 3 (5): running split" in page


@pytest.mark.django_db
def test_the_task_runs_both_policies_and_reports_progress(small_run, monkeypatch):
    seen: list[float] = []
    real_update = WhatIfRun.objects.filter

    monkeypatch.setattr(whatif_service, "PROGRESS_EVERY_S", 0.0)  # record every step

    def spy(*args, **kwargs):
        qs = real_update(*args, **kwargs)
        original = qs.update

        def update(**values):
            if "progress" in values:
                seen.append(values["progress"])
            return original(**values)

        qs.update = update
        return qs

    monkeypatch.setattr(WhatIfRun.objects, "filter", spy)
    outcome = run_whatif.apply(args=[small_run.pk]).get()
    small_run.refresh_from_db()
    assert outcome == {"status": "done", "progress": 1.0}
    assert small_run.status == "done" and small_run.progress == 1.0
    # progress climbs monotonically through the five ablation steps before reaching 1
    steps = [p for p in seen if 0 < p < 1]
    assert steps == sorted(steps) and len(steps) > 50
    assert any(p > 0.8 for p in steps) and seen[-1] == 1.0
    summary = small_run.result["summary"]
    assert set(summary) == {"split", "unified"}
    assert summary["split"]["simulated_hours"] == pytest.approx(1.0)
    series = small_run.result["series"]
    assert len(series["t_hours"]) == 60  # 60 one-minute steps, all kept
    assert len(series["unified"]["cluster_utilization_busy_ratio"]) == 60


@pytest.mark.django_db
def test_an_engine_failure_marks_the_run_failed_with_the_reason(small_run, monkeypatch):
    def boom(**_):
        raise ValueError("scenario exploded")

    monkeypatch.setattr(whatif_service, "build_scenario", boom)
    run_whatif.apply(args=[small_run.pk])
    small_run.refresh_from_db()
    assert small_run.status == "failed" and "scenario exploded" in small_run.error
    assert small_run.result is None


@pytest.mark.django_db
def test_operator_starts_a_run_which_is_queued_after_commit(
    client_as, django_capture_on_commit_callbacks, monkeypatch
):
    queued = []
    monkeypatch.setattr(run_whatif, "delay", lambda pk: queued.append(pk))
    with django_capture_on_commit_callbacks(execute=True):
        response = client_as("operator").post("/whatif/", SMALL)
    run = WhatIfRun.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/whatif/{run.pk}/"
    assert queued == [run.pk] and run.status == "queued" and run.created_by.username == "op"


@pytest.mark.django_db
def test_a_finished_run_shows_table_charts_and_csv(small_run, client_as):
    run_whatif.apply(args=[small_run.pk])
    client = client_as("operator")
    page = client.get(f"/whatif/{small_run.pk}/").content.decode()
    assert "Side by side" in page and 'data-figure="whatif-fig-0"' in page
    assert f'data-refresh-url="/whatif/{small_run.pk}/?partial=1"' in page
    fragment = client.get(f"/whatif/{small_run.pk}/?partial=1").content.decode()
    assert "<html" not in fragment and 'data-status="done"' in fragment
    rows = list(
        csv.DictReader(
            io.StringIO(client.get(f"/whatif/{small_run.pk}/?format=csv").content.decode())
        )
    )
    busy = next(r for r in rows if r["metric"] == "utilization_busy_mean")
    small_run.refresh_from_db()
    assert float(busy["unified"]) == pytest.approx(
        small_run.result["summary"]["unified"]["utilization_busy_mean"]
    )
    api = client.get(f"/api/v1/whatif/{small_run.pk}/").json()
    assert api["status"] == "done" and api["result"]["summary"]["split"]


@pytest.mark.django_db
def test_a_queued_run_shows_progress_and_no_result(small_run, client_as):
    WhatIfRun.objects.filter(pk=small_run.pk).update(status="running", progress=0.42)
    fragment = client_as("operator").get(f"/whatif/{small_run.pk}/?partial=1").content.decode()
    assert 'data-status="running"' in fragment and 'value="42"' in fragment
    assert "running ablation step 3 of 5: +preemption/elastic" in fragment
    assert "Side by side" not in fragment


@pytest.mark.django_db
def test_the_run_stores_the_engines_ablation_whose_ends_are_the_two_policies(small_run):
    from simulation.engine import default_scenario
    from simulation.engine.ablation import run_ablation

    run = whatif_service.whatif_execute(run_id=small_run.pk)
    ablation = run.result["ablation"]
    names = [row["name"] for row in ablation]
    assert names == ["split", "+time-sharing", "+preemption/elastic", "+pooled memory", "unified"]
    # The same rows the engine's run_ablation (``compare --ablate``) produces.
    scen = default_scenario(64, 3, hardware="h100-sxm", hours=1)
    engine_rows = run_ablation(scen, 1, parallel=False)
    for mine, theirs in zip(ablation, engine_rows, strict=True):
        for key in ("utilization_allocated_mean", "ttft_p99_ms", "tpot_p99_ms", "energy_mwh"):
            assert mine[key] == pytest.approx(theirs[key]), (mine["name"], key)
        assert mine["features"] == theirs["features"]
    # The side-by-side columns are the ablation's first and last rows.
    assert run.result["summary"]["split"] == {
        k: v for k, v in ablation[0].items() if k not in ("name", "placement", "features")
    }
    assert run.result["summary"]["unified"]["tpot_p99_ms"] == ablation[-1]["tpot_p99_ms"]


@pytest.mark.django_db
def test_the_page_and_csv_show_ttft_tpot_and_the_ablation_table(small_run, client_as):
    run_whatif.apply(args=[small_run.pk])
    small_run.refresh_from_db()
    client = client_as("operator")
    page = client.get(f"/whatif/{small_run.pk}/").content.decode()
    assert "TTFT P99" in page and "TPOT P99" in page and "end-to-end P99" in page
    # latencies read as durations, not bare millisecond counts
    assert re.search(r"<td>[\d.,]+ (µs|ms|s|min)</td>", page)
    assert "What each mechanism buys (ablation)" in page and "+pooled memory" in page
    text = client.get(f"/whatif/{small_run.pk}/?format=csv&table=ablation").content.decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["name"] for r in rows][0] == "split" and len(rows) == 5
    assert float(rows[-1]["tpot_p99_ms"]) == pytest.approx(
        small_run.result["ablation"][-1]["tpot_p99_ms"]
    )
    assert rows[1]["time_sharing"] == "True" and rows[0]["time_sharing"] == "False"
    side = list(
        csv.DictReader(
            io.StringIO(client.get(f"/whatif/{small_run.pk}/?format=csv").content.decode())
        )
    )
    assert {"ttft_p99_ms", "tpot_p99_ms", "e2e_p99_ms", "inference_timeouts"} <= {
        r["metric"] for r in side
    }
    api = client.get(f"/api/v1/whatif/{small_run.pk}/").json()
    assert [r["name"] for r in api["result"]["ablation"]][-1] == "unified"


@pytest.mark.django_db
def test_a_run_from_before_the_ablation_still_renders(small_run, client_as):
    run_whatif.apply(args=[small_run.pk])
    small_run.refresh_from_db()
    result = dict(small_run.result)
    result.pop("ablation")
    for policy in ("split", "unified"):
        result["summary"][policy].pop("tpot_p99_ms")
    WhatIfRun.objects.filter(pk=small_run.pk).update(result=result)
    page = client_as("operator").get(f"/whatif/{small_run.pk}/").content.decode()
    assert "This run predates the ablation" in page and "—" in page


def _upload(name: str, text: str, kind: str) -> dict:
    return {**SMALL, "trace_kind": kind, "trace_file": SimpleUploadedFile(name, text.encode())}


AZURE_OK = "TIMESTAMP,ContextTokens,GeneratedTokens\n" + "".join(
    f"2023-11-16 18:{m:02d}:{s:02d}.1234567,{500 + m},{100 + s}\n"
    for m in range(0, 30)
    for s in (0, 20, 40)
)


@pytest.mark.django_db
def test_a_bad_trace_is_refused_naming_file_line_and_column(client_as):
    bad = AZURE_OK.splitlines()
    bad[4] = "2023-11-16 18:01:20.1234567,lots,100"
    response = client_as("operator").post(
        "/whatif/", _upload("azure-day.csv", "\n".join(bad) + "\n", "azure")
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert "azure-day.csv, line 5, column ContextTokens: not a number" in page
    assert not WhatIfRun.objects.exists()


@pytest.mark.django_db
def test_a_philly_trace_with_a_wrong_header_names_the_column(client_as):
    text = "timestamp,duration,gpus,gpu_time,cluster\n0,3600,8,28800,c1\n"
    response = client_as("operator").post("/whatif/", _upload("jobs.csv", text, "philly"))
    assert response.status_code == 400
    assert "jobs.csv, line 1, column num_gpus" in response.content.decode()
    assert not WhatIfRun.objects.exists()


@pytest.mark.django_db
def test_a_valid_trace_is_stored_and_used_by_the_run(client_as, monkeypatch):
    monkeypatch.setattr(run_whatif, "delay", lambda pk: None)
    response = client_as("operator").post("/whatif/", _upload("azure-day.csv", AZURE_OK, "azure"))
    assert response.status_code == 302
    run = WhatIfRun.objects.get()
    assert run.trace_kind == "azure" and run.trace_name == "azure-day.csv"
    run = whatif_service.whatif_execute(run_id=run.pk)
    assert run.status == "done", run.error
    assert run.result["scenario"]["trace"] == "azure-day.csv"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "changes,field",
    [({"cards": 10}, "cards"), ({"hours": 100}, "hours"), ({"trace_kind": "azure"}, "trace_file")],
)
def test_bad_parameters_are_refused_and_nothing_saved(client_as, changes, field):
    response = client_as("operator").post("/whatif/", {**SMALL, **changes})
    assert response.status_code == 400
    assert field in response.context["form"].errors
    assert not WhatIfRun.objects.exists()


def test_ablation_changes_read_in_points_and_durations():
    from simulation.whatif_views import delta_display, display

    assert display(132084.0, "ms") == "2.2 min" and display(0.875, "pct") == "87.5%"
    assert delta_display(5.0, "pct") == "+5 pts"
    assert delta_display(-12.0, "ms") == "−12 ms"
    assert display(64.0, "int") == "64"


@pytest.mark.django_db
def test_a_run_is_claimed_once_and_a_redelivery_of_its_own_task_may_restart_it(small_run):
    from simulation.services.whatif_run import whatif_claim

    assert whatif_claim(run_id=small_run.pk, task_id="first") is True
    # A copy sent by the sweep finds it running and leaves it alone...
    assert whatif_claim(run_id=small_run.pk, task_id="swept") is False
    # ...while the same task redelivered after its worker died starts it over.
    assert whatif_claim(run_id=small_run.pk, task_id="first") is True
    WhatIfRun.objects.filter(pk=small_run.pk).update(status="done")
    assert whatif_claim(run_id=small_run.pk, task_id="first") is False


@pytest.mark.django_db
def test_the_sweep_resends_lost_runs_and_not_every_minute(small_run):
    from datetime import timedelta

    from django.utils import timezone

    from simulation.services.whatif_run import (
        RUN_WHATIF_TIME_LIMIT,
        whatif_redispatch_mark,
        whatif_runs_to_redispatch,
    )

    now = timezone.now()
    assert whatif_runs_to_redispatch(now=now) == []  # just queued: its task is on the way
    WhatIfRun.objects.filter(pk=small_run.pk).update(created_at=now - timedelta(minutes=5))
    assert whatif_runs_to_redispatch(now=now) == [small_run.pk]
    whatif_redispatch_mark(run_id=small_run.pk)
    assert whatif_runs_to_redispatch(now=now + timedelta(minutes=1)) == []
    # A run "running" for longer than the task's hard limit has no live execution.
    WhatIfRun.objects.filter(pk=small_run.pk).update(
        status="running",
        started_at=now - timedelta(seconds=RUN_WHATIF_TIME_LIMIT + 120),
        redispatched_at=None,
    )
    assert whatif_runs_to_redispatch(now=now) == [small_run.pk]
