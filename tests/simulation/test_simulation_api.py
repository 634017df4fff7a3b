"""The simulation API: what-if runs queued over POST with the form's validation, twin control."""

from __future__ import annotations

import pytest

from simulation.models import TwinRun, WhatIfRun


@pytest.mark.django_db
def test_an_operator_queues_a_whatif_run_over_the_api(
    client_as, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        response = client_as("operator").post(
            "/api/v1/whatif/",
            {"cards": 128, "hardware": "h100-sxm", "hours": 2, "seed": 5},
            content_type="application/json",
        )
    assert response.status_code == 201, response.content
    run = WhatIfRun.objects.get(pk=response.json()["id"])
    assert (run.cards, run.hardware, run.status) == (128, "h100-sxm", "queued")


@pytest.mark.django_db
def test_a_bad_whatif_request_names_the_field_and_writes_nothing(client_as):
    response = client_as("operator").post(
        "/api/v1/whatif/",
        {"cards": 8, "hardware": "toaster", "hours": 2, "seed": 5},
        content_type="application/json",
    )
    body = response.json()
    assert response.status_code == 400
    assert {"cards", "hardware"} <= set(body["errors"]) and body["code"] == "invalid"
    assert not WhatIfRun.objects.exists()


@pytest.mark.django_db
def test_an_approver_may_read_but_not_queue_whatif_runs(client_as):
    client = client_as("approver")
    assert client.get("/api/v1/whatif/").status_code == 200
    response = client.post("/api/v1/whatif/", {"cards": 128}, content_type="application/json")
    assert response.status_code == 403 and response.json()["code"] == "permission_denied"


@pytest.mark.django_db
def test_whatif_list_filters_by_status_and_paginates(client_as, users):
    for status in ("done", "done", "failed"):
        WhatIfRun.objects.create(cards=64, hardware="h100-sxm", status=status)
    client = client_as("operator")
    body = client.get("/api/v1/whatif/?status=done&page_size=1").json()
    assert body["count"] == 2 and len(body["results"]) == 1 and body["next"]
    bad = client.get("/api/v1/whatif/?status=sleeping")
    assert bad.status_code == 400 and "status" in bad.json()["errors"]


@pytest.mark.django_db
def test_twin_runs_are_listed_and_controlled_over_the_api(client_as, twin_run):
    client = client_as("operator")
    listed = client.get("/api/v1/twin/runs/").json()["results"]
    assert [r["name"] for r in listed] == ["small"]
    paused = client.post(f"/api/v1/twin/runs/{twin_run.pk}/pause/")
    assert paused.status_code == 200 and paused.json()["status"] == "paused"
    faster = client.post(
        f"/api/v1/twin/runs/{twin_run.pk}/speed/",
        {"steps_per_tick": 12},
        content_type="application/json",
    )
    assert faster.json()["steps_per_tick"] == 12
    assert TwinRun.objects.get(pk=twin_run.pk).steps_per_tick == 12


@pytest.mark.django_db
def test_a_bad_speed_is_a_400_and_changes_nothing(client_as, twin_run):
    response = client_as("operator").post(
        f"/api/v1/twin/runs/{twin_run.pk}/speed/",
        {"steps_per_tick": 500},
        content_type="application/json",
    )
    assert response.status_code == 400 and "steps_per_tick" in response.json()["errors"]
    assert TwinRun.objects.get(pk=twin_run.pk).steps_per_tick == twin_run.steps_per_tick


@pytest.mark.django_db
def test_customers_cannot_see_or_control_the_twin(client_as, twin_run):
    client = client_as("customer")
    assert client.get("/api/v1/twin/runs/").status_code == 403
    assert client.post(f"/api/v1/twin/runs/{twin_run.pk}/pause/").status_code == 403
    assert TwinRun.objects.get(pk=twin_run.pk).status == "running"
