"""The twin control page: who sees it, who may act, and what each action does."""

from __future__ import annotations

import pytest

from inventory.models import Cluster
from simulation.engine import Engine
from simulation.models import TwinRun
from simulation.services import twin_tick
from tests.access import PageAccessCases


class TestTwinPage(PageAccessCases):
    url = "/twin/"
    allowed_roles = ("operator", "approver")


@pytest.mark.django_db
def test_the_page_lists_runs_with_both_tick_kinds(client_as, twin_run):
    twin_tick(run_id=twin_run.pk, expected_seq=0)
    page = client_as("operator").get("/twin/").content.decode()
    assert "small" in page and "Scheduler ticks" in page and "Pool ticks" in page
    # Each button names the run it acts on (one paused the wrong twin when all read "Pause").
    for verb in ("Pause", "Reset", "Set speed"):
        assert f"{verb} {twin_run.name}" in page


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["approver", "customer"])
def test_only_operators_may_control_a_run(client_as, twin_run, role):
    response = client_as(role).post(f"/twin/{twin_run.pk}/pause/")
    assert response.status_code == 403
    twin_run.refresh_from_db()
    assert twin_run.status == TwinRun.Status.RUNNING


@pytest.mark.django_db
def test_operator_pauses_speeds_up_resets_and_starts_a_run(client_as, twin_run):
    client = client_as("operator")
    assert client.post(f"/twin/{twin_run.pk}/pause/").status_code == 302
    twin_run.refresh_from_db()
    assert twin_run.status == TwinRun.Status.PAUSED
    client.post(f"/twin/{twin_run.pk}/speed/", {"steps_per_tick": 5})
    twin_run.refresh_from_db()
    assert twin_run.steps_per_tick == 5
    client.post(f"/twin/{twin_run.pk}/start/")
    twin_tick(run_id=twin_run.pk, expected_seq=0)
    twin_run.refresh_from_db()
    assert twin_run.sim_time == 300.0
    client.post(f"/twin/{twin_run.pk}/reset/")
    twin_run.refresh_from_db()
    assert twin_run.sim_time == 0.0 and twin_run.tick_seq == 1
    assert Engine.load_state(bytes(twin_run.state)).t == 0.0


@pytest.mark.django_db
def test_a_bad_speed_is_refused_with_a_message(client_as, twin_run):
    response = client_as("operator").post(
        f"/twin/{twin_run.pk}/speed/", {"steps_per_tick": 500}, follow=True
    )
    assert "less than or equal to 60" in response.content.decode()
    twin_run.refresh_from_db()
    assert twin_run.steps_per_tick == 1


@pytest.mark.django_db
def test_operator_creates_a_run_from_the_form(client_as):
    response = client_as("operator").post(
        "/twin/new/",
        {"name": "lab", "cards": 64, "hardware": "h100-sxm", "policy": "split", "seed": 1},
    )
    assert response.status_code == 302
    run = TwinRun.objects.get(name="lab")
    assert run.cluster.kind == Cluster.Kind.SPLIT
    assert run.cluster.nodes.count() == 8


@pytest.mark.django_db
def test_bad_form_input_is_named_and_creates_nothing(client_as):
    response = client_as("operator").post(
        "/twin/new/",
        {"name": "lab", "cards": 10, "hardware": "h100-sxm", "policy": "unified", "seed": 1},
    )
    assert response.status_code == 400
    assert "greater than or equal to 64" in response.content.decode()
    assert not Cluster.objects.filter(name="lab").exists()
