"""The plan page's migration timeline: asked, confirmed and served share per workload over time,
gate evaluations marked with their outcome, every line from the plan's own rows, and an empty
line named on the page rather than left out silently."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from rollout.models import (
    AnalysisRun,
    Gate,
    Outcome,
    PhaseKind,
    ReadingVerdict,
    RouterCall,
    RouterOutcome,
    RouterReading,
    TrafficRouter,
)
from rollout.selectors_timeline import MARK_Y, plan_migration_timeline
from rollout.services.audit import SYSTEM, audit_record


def _iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat()


def _trace(figure: dict, workload: str, kind: str) -> dict:
    found = [t for t in figure["data"] if t["meta"] == kind and t["name"].startswith(workload)]
    assert len(found) == 1, (workload, kind, [t["name"] for t in figure["data"]])
    return found[0]


def _router(name: str = "edge") -> TrafficRouter:
    return TrafficRouter.objects.create(
        name=name,
        kind="haproxy",
        haproxy_address="127.0.0.1:9999",
        haproxy_backend="chat",
        haproxy_source_server="old",
        haproxy_target_server="uni",
    )


def _gate(plan, kind: str, step: int, at: datetime) -> Gate:
    gate = Gate.objects.create(plan=plan, phase=plan.phases.get(kind=kind), step_index=step)
    Gate.objects.filter(pk=gate.pk).update(created_at=at)
    gate.refresh_from_db()
    return gate


def _run(gate: Gate, status: str, finished: datetime) -> AnalysisRun:
    return AnalysisRun.objects.create(
        gate=gate,
        gate_revision=gate.revision,
        status=status,
        started_at=finished - timedelta(seconds=30),
        finished_at=finished,
    )


@pytest.fixture
def moved_plan(plan_factory, users):
    """A plan with pilot (acme-batch, on the twin) and gray 25 → 100 (acme-chat, on an HAProxy
    router): its gates opened, one router call answered, two readings, three analysis runs
    and an automatic rollback during the last step."""
    plan = plan_factory(gray_steps=[25, 100])
    # The audit trail cannot be back-dated (append-only): the rollback is "now", the rest
    # of the story is placed before it.
    rollback = audit_record(actor=SYSTEM, action="rollback", plan=plan, to_state="rolled_back")
    t0 = rollback.at - timedelta(seconds=250)
    times = {"t0": t0, "rollback": rollback.at}
    pilot = _gate(plan, PhaseKind.PILOT, 0, t0)
    gray_25 = _gate(plan, PhaseKind.GRAY, 0, t0 + timedelta(seconds=100))
    gray_100 = _gate(plan, PhaseKind.GRAY, 1, t0 + timedelta(seconds=200))
    phases = {p.kind: p for p in plan.phases.all()}
    phases[PhaseKind.PILOT].actual_start = t0
    phases[PhaseKind.PILOT].save(update_fields=["actual_start"])
    phases[PhaseKind.GRAY].actual_start = t0 + timedelta(seconds=100)
    phases[PhaseKind.GRAY].save(update_fields=["actual_start"])

    chat = plan.workloads.get(workload__name="acme-chat")
    chat.router = _router()
    chat.save(update_fields=["router"])
    call = RouterCall.objects.create(
        plan=plan,
        plan_workload=chat,
        router=chat.router,
        router_label="edge",
        operation="set",
        step="gray 25%",
        desired_share=25.0,
        confirmed_share=25.0,
        outcome=RouterOutcome.CONFIRMED,
        idempotency_key=f"t-{plan.pk}-1",
        actor_label="op",
        confirmed_at=t0 + timedelta(seconds=105),
    )
    RouterCall.objects.filter(pk=call.pk).update(at=t0 + timedelta(seconds=101))
    for seconds, weights, served in ((130, 25.0, 24.0), (160, 25.0, 26.5)):
        RouterReading.objects.create(
            plan=plan,
            plan_workload=chat,
            call=call,
            at=t0 + timedelta(seconds=seconds),
            asked_share=25.0,
            weights_share=weights,
            served_share=served,
            window_requests=200,
            verdict=ReadingVerdict.WITHIN,
        )
    _run(pilot, Outcome.INCONCLUSIVE, t0 + timedelta(seconds=90))
    _run(gray_25, Outcome.SUCCESSFUL, t0 + timedelta(seconds=190))
    _run(gray_100, Outcome.FAILED, t0 + timedelta(seconds=240))
    # Still running: no evaluation yet, so no mark.
    AnalysisRun.objects.create(gate=gray_100, gate_revision=2, started_at=rollback.at)
    return plan, times


def test_the_asked_line_follows_the_gates_and_the_rollback(moved_plan):
    plan, times = moved_plan
    t0 = times["t0"]
    now = times["rollback"] + timedelta(seconds=50)
    figure = plan_migration_timeline(plan, now=now)["figure"]
    at = [t0 + timedelta(seconds=s) for s in (0, 100, 200)] + [times["rollback"], now]

    chat = _trace(figure, "acme-chat", "asked")
    # Nothing during the pilot, the gray steps as their gates opened, back to the step before
    # on the rollback (the last approved), held until now.
    assert chat["x"] == [_iso(t) for t in at]
    assert chat["y"] == [0.0, 25.0, 100.0, 25.0, 25.0]
    assert chat["line"]["shape"] == "hv"

    batch = _trace(figure, "acme-batch", "asked")
    assert batch["y"] == [100.0, 100.0, 100.0, 100.0, 100.0]


def test_confirmed_and_served_lines_carry_the_routers_answers_at_their_times(moved_plan):
    plan, times = moved_plan
    t0 = times["t0"]
    figure = plan_migration_timeline(plan, now=times["rollback"])["figure"]

    confirmed = _trace(figure, "acme-chat", "confirmed")
    # The call's read-back at its confirmation, then the weights each reading found.
    assert confirmed["x"] == [_iso(t0 + timedelta(seconds=s)) for s in (105, 130, 160)]
    assert confirmed["y"] == [25.0, 25.0, 25.0]

    served = _trace(figure, "acme-chat", "served")
    assert served["x"] == [_iso(t0 + timedelta(seconds=s)) for s in (130, 160)]
    assert served["y"] == [24.0, 26.5]


def test_gate_evaluations_are_marked_with_their_outcome_and_gate(moved_plan):
    plan, times = moved_plan
    t0 = times["t0"]
    result = plan_migration_timeline(plan, now=times["rollback"])
    marks = {t["meta"]: t for t in result["figure"]["data"] if t["meta"].startswith("gate-")}

    assert set(marks) == {"gate-pass", "gate-fail", "gate-inconclusive"}
    assert marks["gate-pass"]["x"] == [_iso(t0 + timedelta(seconds=190))]
    assert marks["gate-fail"]["x"] == [_iso(t0 + timedelta(seconds=240))]
    assert marks["gate-inconclusive"]["x"] == [_iso(t0 + timedelta(seconds=90))]
    assert "gray 25%" in marks["gate-pass"]["text"][0]
    assert "successful" in marks["gate-pass"]["text"][0]
    assert "gray 100%" in marks["gate-fail"]["text"][0]
    assert "failed" in marks["gate-fail"]["text"][0]
    assert "pilot" in marks["gate-inconclusive"]["text"][0]
    # Outcomes are told apart by symbol too, not only by colour.
    symbols = {key: t["marker"]["symbol"] for key, t in marks.items()}
    assert len(set(symbols.values())) == 3
    assert all(y == MARK_Y for t in marks.values() for y in t["y"])
    # The running analysis is not an evaluation yet.
    assert result["marks"] == {"pass": 1, "fail": 1, "inconclusive": 1}


def test_phase_starts_are_marked_on_the_time_axis(moved_plan):
    plan, times = moved_plan
    layout = plan_migration_timeline(plan, now=times["rollback"])["figure"]["layout"]

    assert [s["x0"] for s in layout["shapes"]] == [
        _iso(times["t0"]),
        _iso(times["t0"] + timedelta(seconds=100)),
    ]
    assert [a["text"] for a in layout["annotations"]] == ["pilot starts", "gray starts"]
    assert layout["title"]["text"] == "Migration timeline"


def test_a_twin_workload_says_it_has_no_confirmed_or_served_line(moved_plan):
    plan, times = moved_plan
    result = plan_migration_timeline(plan, now=times["rollback"])

    assert not [t for t in result["figure"]["data"] if t["name"].startswith("acme-batch ·")][1:]
    assert any("acme-batch" in note and "digital twin" in note for note in result["missing"])
    assert not any("acme-chat" in note for note in result["missing"])


def test_a_routed_plan_without_readings_says_the_served_line_is_missing(plan_factory):
    plan = plan_factory(gray_steps=[50, 100])
    chat = plan.workloads.get(workload__name="acme-chat")
    chat.router = _router("gw")
    chat.save(update_fields=["router"])
    opened = _gate(plan, PhaseKind.GRAY, 0, datetime(2030, 1, 1, 12, tzinfo=UTC))

    result = plan_migration_timeline(plan, now=opened.created_at + timedelta(minutes=5))

    metas = {t["meta"] for t in result["figure"]["data"] if t["name"].startswith("acme-chat")}
    assert metas == {"asked"}
    assert _trace(result["figure"], "acme-chat", "asked")["y"] == [50.0, 50.0]
    notes = [n for n in result["missing"] if "acme-chat" in n]
    assert any("no served split" in n and "gw" in n for n in notes)
    assert any("confirmed no share" in n for n in notes)


def test_a_draft_plan_has_no_figure_and_says_nothing_was_asked(plan_factory):
    plan = plan_factory()

    result = plan_migration_timeline(plan, now=datetime(2030, 1, 1, tzinfo=UTC))

    assert result["figure"] is None
    assert any("has not started" in n for n in result["missing"])


def test_another_plans_rows_never_reach_the_timeline(moved_plan, plan_factory):
    plan, times = moved_plan
    other = plan_factory(criteria={}, gray_steps=[10, 100])  # another name
    item = other.workloads.get(workload__name="acme-chat")
    RouterReading.objects.create(
        plan=other,
        plan_workload=item,
        at=times["t0"] + timedelta(seconds=140),
        asked_share=10.0,
        weights_share=10.0,
        served_share=99.0,
        verdict=ReadingVerdict.WITHIN,
    )

    figure = plan_migration_timeline(plan, now=times["rollback"])["figure"]

    assert 99.0 not in _trace(figure, "acme-chat", "served")["y"]


def test_the_plan_page_carries_the_figure_as_json_and_loads_the_drawing_script(
    moved_plan, client, users
):
    plan, _times = moved_plan
    client.force_login(users["operator"])

    page = client.get(f"/migrations/{plan.pk}/").content.decode()

    assert '<script id="migration-timeline-data" type="application/json">' in page
    start = page.index('<script id="migration-timeline-data" type="application/json">')
    body = page[page.index(">", start) + 1 : page.index("</script>", start)]
    figure = json.loads(body)
    assert {t["meta"] for t in figure["data"]} >= {"asked", "confirmed", "served", "gate-fail"}
    assert "js/migration-timeline.js" in page
    assert 'data-timeline-figure="migration-timeline-data"' in page
    assert 'id="migration-timeline-caption"' in page
    assert "digital twin" in page  # the twin workload's missing lines, said on the page


def test_a_draft_plan_page_says_there_is_nothing_to_draw(plan_factory, client, users):
    plan = plan_factory()
    client.force_login(users["operator"])

    page = client.get(f"/migrations/{plan.pk}/").content.decode()

    assert "migration-timeline-data" not in page
    assert "Nothing to draw yet" in page
    assert "migration-timeline.js" not in page
