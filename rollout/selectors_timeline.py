"""The migration timeline on the plan page: per workload, its share on the target over time as
the plan *asked* it, as its router *confirmed* it and as the router measured it *served*, with
every gate evaluation and phase start on the same time axis.

Everything comes from the plan's own rows. The share asked is redrawn from the transitions
that set it, with the rule they use (:func:`rollout.models.plans.phase_share`): each gate's
opening (start and every promotion) asks its step, a ``retry`` asks the current step again, an
automatic ``rollback`` returns to the previous gate's step (the last one approved, 0 before
any) and an ``abort`` to 0. Confirmations are the routers' read-backs (``RouterCall`` answers
and the weights of ``RouterReading``); the served split is ``RouterReading.served_share``.
A line without rows is named in ``missing`` so the page says so instead of drawing nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.utils.translation import gettext as _

from cluster_portal.web.charttext import chart_text
from rollout.models import (
    AnalysisRun,
    Gate,
    MigrationPlan,
    Outcome,
    PhaseKind,
    PlanWorkload,
    RouterKind,
)
from rollout.models.plans import phase_share

# Okabe-Ito (as cost/charts.py): one colour per workload, told apart with colour-vision
# deficiencies; the three lines of one workload differ by dash and marker, not colour.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00")
LINE_STYLE = {
    "asked": {"dash": "dot", "width": 2, "shape": "hv"},
    "confirmed": {"dash": "dash", "width": 2, "shape": "hv"},
    "served": {"dash": "solid", "width": 2, "shape": "linear"},
}
# Gate marks sit just above the 100 % line, one symbol and colour per outcome.
MARK_Y = 106.0
MARKS = {
    "pass": {"symbol": "circle", "color": "#009E73"},
    "fail": {"symbol": "x", "color": "#D55E00"},
    "inconclusive": {"symbol": "diamond", "color": "#E69F00"},
}
MARK_OF = {
    Outcome.SUCCESSFUL: "pass",
    Outcome.FAILED: "fail",
    Outcome.ERROR: "fail",
    Outcome.INCONCLUSIVE: "inconclusive",
}
# Audit actions that set shares without opening a gate (rollout.services.transitions, .analysis).
SHARE_ACTIONS = ("retry", "rollback", "abort")


@dataclass
class Line:
    """One workload's points of one kind (``asked``, ``confirmed``, ``served``), in percent."""

    kind: str
    at: list[datetime] = field(default_factory=list)
    share: list[float] = field(default_factory=list)

    def add(self, at: datetime, share: float) -> None:
        self.at.append(at)
        self.share.append(round(share, 4))


def _iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat()


def _asked_events(plan: MigrationPlan, gates: list[Gate]) -> list[tuple[datetime, str, int]]:
    """``(at, what, index of the gate it concerns)`` in time order: what set the shares."""
    events = [(g.created_at, "open", i) for i, g in enumerate(gates)]
    entries = plan.audit_entries.filter(action__in=SHARE_ACTIONS).values_list("at", "action")
    for at, action in entries:
        # The gate current at that moment: the last one opened before it.
        index = max((i for i, g in enumerate(gates) if g.created_at <= at), default=None)
        if index is not None:
            events.append((at, action, index))
    return sorted(events, key=lambda e: (e[0], e[1] != "open"))


def _gate_share(plan: MigrationPlan, gate: Gate, item: PlanWorkload) -> float:
    percent = plan.gray_steps[gate.step_index] if gate.phase.kind == PhaseKind.GRAY else 100
    return phase_share(item.phase, gate.phase.kind, percent) * 100


def _asked(plan: MigrationPlan, gates: list[Gate], item: PlanWorkload, end: datetime) -> Line:
    line = Line("asked")
    for at, what, index in _asked_events(plan, gates):
        if what == "abort":
            share = 0.0
        elif what == "rollback":
            share = _gate_share(plan, gates[index - 1], item) if index > 0 else 0.0
        else:
            share = _gate_share(plan, gates[index], item)
        line.add(at, share)
    if line.at and line.at[-1] < end:
        line.add(end, line.share[-1])  # the last share asked holds until now (or the end)
    return line


def _gate_marks(plan: MigrationPlan) -> dict[str, dict]:
    runs = (
        AnalysisRun.objects.filter(gate__plan=plan, finished_at__isnull=False)
        .filter(status__in=list(MARK_OF))
        .select_related("gate__phase", "gate__plan")
        .order_by("finished_at", "id")
    )
    marks: dict[str, dict] = {key: {"x": [], "text": []} for key in MARKS}
    outcomes = dict(Outcome.choices)
    for run in runs:
        key = MARK_OF[run.status]
        marks[key]["x"].append(_iso(run.finished_at))
        marks[key]["text"].append(
            chart_text(
                _("Gate %(gate)s, revision %(revision)s, analysis #%(run)s: %(outcome)s")
                % {
                    "gate": run.gate.label,
                    "revision": run.gate_revision,
                    "run": run.pk,
                    "outcome": outcomes[run.status],
                }
            )
        )
    return marks


def _missing(item: PlanWorkload, plan: MigrationPlan, lines: dict[str, Line]) -> list[str]:
    """Why a line of this workload is empty, in the page's words."""
    name = item.workload.name
    router = item.router if item.router_id else plan.router
    twin = router is None or router.kind == RouterKind.TWIN
    notes = []
    if not lines["asked"].at:
        notes.append(_("%(name)s: no share asked yet (the plan has not started).") % {"name": name})
    if twin:
        if not (lines["confirmed"].at or lines["served"].at):
            notes.append(
                _(
                    "%(name)s: moved by the digital twin (shares take effect at commit), so no "
                    "router confirmed or measured its share: no confirmed or served line."
                )
                % {"name": name}
            )
        return notes
    if not lines["confirmed"].at:
        notes.append(
            _("%(name)s: router %(router)s has confirmed no share yet: no confirmed line.")
            % {"name": name, "router": router.name}
        )
    if not lines["served"].at:
        notes.append(
            _(
                "%(name)s: no served split read from router %(router)s (no readings with "
                "per-server counters yet): no served line."
            )
            % {"name": name, "router": router.name}
        )
    return notes


def plan_migration_timeline(plan: MigrationPlan, *, now: datetime) -> dict:
    """The timeline figure of ``plan`` (one the caller already authorised) up to ``now``.

    ``figure`` is a Plotly figure (``None`` when nothing was asked, confirmed or served yet),
    ``missing`` one sentence per empty line, ``marks`` how many gate evaluations of each
    outcome are marked."""
    items = list(plan.workloads.select_related("workload", "router").order_by("phase", "pk"))
    gates = list(plan.gates.select_related("phase", "plan").order_by("created_at", "id"))
    end = plan.updated_at if plan.is_finished else now
    lines_of: dict[int, dict[str, Line]] = {
        item.pk: {
            "asked": _asked(plan, gates, item, end),
            "confirmed": Line("confirmed"),
            "served": Line("served"),
        }
        for item in items
    }
    for call in plan.router_calls.filter(confirmed_share__isnull=False).order_by("at", "id"):
        lines = lines_of.get(call.plan_workload_id)
        if lines is not None:
            lines["confirmed"].add(call.confirmed_at or call.at, call.confirmed_share)
    for reading in plan.router_readings.order_by("at", "id"):
        lines = lines_of.get(reading.plan_workload_id)
        if lines is None:
            continue
        if reading.weights_share is not None:
            lines["confirmed"].add(reading.at, reading.weights_share)
        if reading.served_share is not None:
            lines["served"].add(reading.at, reading.served_share)
    data = []
    missing = []
    names = {
        "asked": _("asked"),
        "confirmed": _("confirmed by the router"),
        "served": _("served (measured)"),
    }
    for i, item in enumerate(items):
        lines = lines_of[item.pk]
        # Sorted once more: call answers and readings interleave in time.
        for line in lines.values():
            pairs = sorted(zip(line.at, line.share, strict=True), key=lambda p: p[0])
            line.at, line.share = [p[0] for p in pairs], [p[1] for p in pairs]
        missing.extend(_missing(item, plan, lines))
        colour = PALETTE[i % len(PALETTE)]
        for kind, line in lines.items():
            if not line.at:
                continue
            style = LINE_STYLE[kind]
            label = f"{chart_text(item.workload.name)} · {names[kind]}"
            data.append(
                {
                    "type": "scatter",
                    "mode": "lines" if kind == "asked" else "lines+markers",
                    "name": label,
                    "legendgroup": f"w{item.pk}",
                    "meta": kind,
                    "x": [_iso(at) for at in line.at],
                    "y": line.share,
                    "line": {
                        "color": colour,
                        "dash": style["dash"],
                        "width": style["width"],
                        "shape": style["shape"],
                    },
                    "hovertemplate": f"{label}: %{{y:.1f}}%<br>%{{x}}<extra></extra>",
                }
            )
    marks = _gate_marks(plan)
    mark_names = {
        "pass": _("gate passed"),
        "fail": _("gate failed"),
        "inconclusive": _("gate inconclusive"),
    }
    for key, mark in marks.items():
        if not mark["x"]:
            continue
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": mark_names[key],
                "meta": f"gate-{key}",
                "x": mark["x"],
                "y": [MARK_Y] * len(mark["x"]),
                "text": mark["text"],
                "marker": {
                    "symbol": MARKS[key]["symbol"],
                    "color": MARKS[key]["color"],
                    "size": 11,
                },
                "hovertemplate": "%{text}<br>%{x}<extra></extra>",
            }
        )
    counts = {key: len(mark["x"]) for key, mark in marks.items()}
    if not data:
        return {"figure": None, "missing": missing, "marks": counts}
    shapes, annotations = [], []
    for phase in sorted(plan.phases.all(), key=lambda p: p.order):
        if phase.actual_start is None:
            continue
        x = _iso(phase.actual_start)
        shapes.append(
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": x,
                "x1": x,
                "y0": 0,
                "y1": 1,
                "line": {"color": "#888888", "width": 1, "dash": "dot"},
            }
        )
        annotations.append(
            {
                "x": x,
                "xref": "x",
                "y": 1,
                "yref": "paper",
                "yanchor": "bottom",
                "xanchor": "left",
                "showarrow": False,
                "text": chart_text(_("%(phase)s starts") % {"phase": phase.get_kind_display()}),
                "font": {"size": 11},
            }
        )
    layout = {
        "title": {"text": chart_text(_("Migration timeline"))},
        "margin": {"l": 56, "r": 16, "t": 50, "b": 40},
        "xaxis": {"title": {"text": chart_text(_("time (UTC)"))}, "type": "date"},
        "yaxis": {
            "title": {"text": chart_text(_("share on the target (%)"))},
            "range": [-3, 112],
            "ticksuffix": "%",
            "tickvals": [0, 25, 50, 75, 100],
        },
        "legend": {"orientation": "h", "y": -0.2},
        "hovermode": "closest",
        "shapes": shapes,
        "annotations": annotations,
    }
    return {"figure": {"data": data, "layout": layout}, "missing": missing, "marks": counts}
