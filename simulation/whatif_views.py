"""What-if pages: start a run, watch its progress live, compare the two policies and see
what each mechanism buys (the engine's ablation, the same table as ``compare --ablate``)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.access import operator_page
from cluster_portal.web import units
from cluster_portal.web.csv import csv_writer
from cost import charts
from simulation.engine.ablation import STEPS as ABLATION_STEPS
from simulation.labels import ABLATION_NAMES, feature_label
from simulation.models import WhatIfRun
from simulation.services.whatif import whatif_create
from simulation.services.whatif_run import FEATURE_NAMES, POLICIES
from simulation.whatif_forms import WhatIfForm

# (summary key, label, format) of the side-by-side table; keys from the engine's summary.
# TTFT and TPOT P99 are the headline latency; end-to-end stays, labelled as such.
ROWS = (
    ("goodput_pflop_per_card_hour", gettext_lazy("goodput (PFLOP per card-hour)"), "num"),
    ("utilization_busy_mean", gettext_lazy("busy utilization"), "pct"),
    ("utilization_allocated_mean", gettext_lazy("allocated utilization (not a gain)"), "pct"),
    ("training_samples_per_s_mean", gettext_lazy("training samples/s"), "num"),
    ("mfu_mean", gettext_lazy("MFU (running training)"), "pct"),
    ("training_goodput_pflops", gettext_lazy("training goodput (PFLOP/s)"), "num"),
    ("ttft_p99_ms", gettext_lazy("TTFT P99"), "ms"),
    ("tpot_p99_ms", gettext_lazy("TPOT P99"), "ms"),
    ("ttft_p50_ms", gettext_lazy("TTFT P50"), "ms"),
    ("tpot_p50_ms", gettext_lazy("TPOT P50"), "ms"),
    ("slo_attainment", gettext_lazy("SLO attainment (TTFT and TPOT)"), "pct"),
    ("e2e_p99_ms", gettext_lazy("end-to-end P99"), "ms"),
    ("inference_requests", gettext_lazy("inference requests"), "int"),
    ("inference_timeouts", gettext_lazy("requests timed out"), "int"),
    ("hbm_live_fraction_mean", gettext_lazy("HBM live fraction"), "pct"),
    ("preemptions", gettext_lazy("preemptions"), "int"),
    ("completed_jobs", gettext_lazy("completed jobs"), "int"),
    ("energy_mwh", gettext_lazy("energy (MWh, facility)"), "num"),
)
# The ablation's columns: the same keys as ``compare --ablate`` prints.
ABLATION_COLUMNS = (
    ("utilization_allocated_mean", gettext_lazy("allocated"), "pct"),
    ("utilization_busy_mean", gettext_lazy("busy"), "pct"),
    ("training_samples_per_s_mean", gettext_lazy("training samples/s"), "num"),
    ("mfu_mean", gettext_lazy("MFU"), "pct"),
    ("training_goodput_pflops", gettext_lazy("goodput (PFLOP/s)"), "num"),
    ("ttft_p99_ms", gettext_lazy("TTFT P99"), "ms"),
    ("tpot_p99_ms", gettext_lazy("TPOT P99"), "ms"),
    ("slo_attainment", gettext_lazy("SLO attainment"), "pct"),
    ("energy_mwh", gettext_lazy("energy (MWh)"), "num"),
)
POLICY_LABELS = {"split": gettext_lazy("split"), "unified": gettext_lazy("unified")}
CHARTS = (
    ("cluster_utilization_allocated_ratio", gettext_lazy("Allocated utilization"), True),
    ("cluster_utilization_busy_ratio", gettext_lazy("Busy utilization"), True),
    ("cluster_training_samples_per_second", gettext_lazy("Training samples/s"), False),
    ("cluster_inference_tokens_per_second", gettext_lazy("Inference tokens/s"), False),
)


@operator_page
def whatif_page(request: HttpRequest) -> HttpResponse:
    """GET: the form and recent runs; POST: validate, save and queue a run."""
    form = WhatIfForm()
    if request.method == "POST":
        form = WhatIfForm(request.POST, request.FILES)
        if form.is_valid():
            data = form.cleaned_data
            run = whatif_create(
                cards=data["cards"],
                hardware=data["hardware"],
                hours=data["hours"],
                seed=data["seed"],
                seeds=data["seeds"],
                trace_kind=data["trace_kind"],
                trace_name=data["trace_name"],
                trace_text=data["trace_text"],
                serve_model=data.get("serve_model") or "",
                created_by=request.user,
            )
            messages.success(request, _("What-if run %(id)s queued.") % {"id": run.pk})
            return redirect("whatif-detail", pk=run.pk)
    runs = WhatIfRun.objects.select_related("created_by").defer("trace_text", "result")[:20]
    status = 400 if form.errors else 200
    return render(request, "simulation/whatif.html", {"form": form, "runs": runs}, status=status)


def display(value, fmt: str) -> str:
    """One cell: ``—`` where the run did not report the figure (e.g. an older run).

    Latencies arrive in ms from the engine's summary and read as durations ("2.2 min")."""
    if value is None:
        return "—"
    if fmt == "pct":
        return units.percent(value)
    if fmt == "int":
        return units.integer(value)
    if fmt == "ms":
        return units.duration(value / 1000)
    return units.number(value)


def delta_display(delta: float, fmt: str) -> str:
    """The change from the row before: percentage points for shares, a duration for
    latencies (signed), else a number."""
    sign = "+" if delta >= 0 else "−"
    size = abs(delta)
    if fmt == "pct":
        return _("%(sign)s%(value)s pts") % {"sign": sign, "value": units.number(size, digits=2)}
    if fmt == "ms":
        return sign + units.duration(size / 1000)
    return sign + units.number(size)


def _range(st: dict | None, fmt: str, signed: bool = False) -> str:
    """``low – high`` over the seeds ("" for one seed or an older run without a spread)."""
    if not st or st.get("n", 1) <= 1:
        return ""
    show = (lambda v: delta_display(v, fmt)) if signed else (lambda v: display(v, fmt))
    return _("%(low)s – %(high)s") % {"low": show(st["min"]), "high": show(st["max"])}


def _table(result: dict) -> list[dict]:
    """Side-by-side rows: means over the run's seeds, each with its range, and the paired
    unified − split difference with its range and 95% confidence interval."""
    spread = result.get("spread") or {}
    diff = spread.get("unified_minus_split", {})
    rows = []
    for key, label, fmt in ROWS:
        split, unified = (result["summary"][p].get(key) for p in POLICIES)
        d = diff.get(key)
        if d is None and split is not None and unified is not None:
            d = {"mean": unified - split, "n": 1}
        rows.append(
            {
                "key": key,
                "label": label,
                "split": split,
                "unified": unified,
                "split_display": display(split, fmt),
                "unified_display": display(unified, fmt),
                "split_range": _range(spread.get("split", {}).get(key), fmt),
                "unified_range": _range(spread.get("unified", {}).get(key), fmt),
                "diff": d,
                "diff_display": "—" if d is None else delta_display(d["mean"], fmt),
                "diff_range": _range(d, fmt, signed=True),
            }
        )
    return rows


HEADLINE_LABELS = (
    ("goodput", gettext_lazy("Goodput per card-hour"), "num", "ratio"),
    ("busy", gettext_lazy("Busy utilization"), "pct", "points"),
    ("allocated", gettext_lazy("Allocated utilization (beside it, not a gain)"), "pct", "points"),
)


def _gain(value: float | None, kind: str) -> str:
    if value is None:
        return "—"
    if kind == "ratio":
        return ("+" if value >= 0 else "−") + units.percent(abs(value))
    return delta_display(value * 100, "pct")


def _headline(result: dict) -> list[dict]:
    """The run's headline (engine.headline, the figure ``compare`` prints): per figure the
    split and unified means, the paired gain and its 95% interval over the seeds."""
    h = result.get("headline")
    if not h:
        return []
    rows = []
    for key, label, fmt, kind in HEADLINE_LABELS:
        fig = h.get(key) or {}
        if "gain" not in fig:
            continue
        g = fig["gain"]
        rows.append(
            {
                "key": key,
                "label": label,
                "split": display(fig["split"]["mean"], fmt),
                "unified": display(fig["unified"]["mean"], fmt),
                "gain": _gain(g["mean"], kind),
                "low": None if g.get("ci95_low") is None else _gain(g["ci95_low"], kind),
                "high": None if g.get("ci95_high") is None else _gain(g["ci95_high"], kind),
                "n": g.get("n", 1),
            }
        )
    return rows


def _ablation(result: dict) -> list[dict]:
    """The ablation rows with each figure and its change from the row before."""
    rows, previous = [], None
    for row in result.get("ablation") or []:
        cells = []
        for key, _label, fmt in ABLATION_COLUMNS:
            value = row.get(key)
            before = previous.get(key) if previous else None
            delta = None
            if value is not None and before is not None:
                delta = (value - before) * (100 if fmt == "pct" else 1)
            cells.append(
                {
                    "key": key,
                    "display": display(value, fmt),
                    "delta": delta,
                    "delta_display": "" if delta is None else delta_display(delta, fmt),
                }
            )
        rows.append(
            {
                "name": row["name"],
                "label": ABLATION_NAMES.get(row["name"], row["name"]),
                "features": [
                    feature_label(k) for k in FEATURE_NAMES if row.get("features", {}).get(k)
                ],
                "cells": cells,
            }
        )
        previous = row
    return rows


def _stage(run: WhatIfRun) -> dict | None:
    """What a running run is doing: an ablation step (first seed), then split and unified on
    each further seed (progress is spread evenly over the runs)."""
    if run.status != WhatIfRun.Status.RUNNING:
        return None
    steps = len(ABLATION_STEPS)
    total = steps + 2 * (max(run.seeds, 1) - 1)
    index = min(int(run.progress * total), total - 1)
    if index < steps:
        name = ABLATION_STEPS[index][0]
        return {"ablation": index + 1, "name": str(ABLATION_NAMES.get(name, name))}
    k = index - steps
    return {
        "seed": run.seed + 1 + k // 2,
        "policy": str(POLICY_LABELS[POLICIES[k % 2]]),
        "n": 2 + k // 2,
        "seeds": run.seeds,
    }


def _figures(result: dict) -> list[tuple[str, dict]]:
    series = result["series"]
    return [
        (
            f"whatif-fig-{i}",
            charts.lines(
                str(title),
                {str(POLICY_LABELS[p]): (series["t_hours"], series[p][metric]) for p in POLICIES},
                "",
                percent=percent,
            ),
        )
        for i, (metric, title, percent) in enumerate(CHARTS)
    ]


@operator_page
def whatif_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One run; ``?partial=1`` is the fragment the page polls, ``?format=csv`` the table."""
    run = get_object_or_404(WhatIfRun, pk=pk)
    if request.GET.get("format") == "csv":
        return _csv(run, request.GET.get("table", ""))
    context = {
        "run": run,
        "percent": round(run.progress * 100),
        "stage": _stage(run),
        "steps": len(ABLATION_STEPS),
    }
    if run.status == WhatIfRun.Status.DONE and run.result:
        context["rows"] = _table(run.result)
        context["headline"] = _headline(run.result)
        context["ablation"] = _ablation(run.result)
        context["ablation_columns"] = [label for _k, label, _f in ABLATION_COLUMNS]
        context["figures"] = _figures(run.result)
        context["scenario"] = run.result.get("scenario", {})
        context["seeds"] = run.result.get("seeds", [run.seed])
    template = (
        "simulation/_whatif_body.html"
        if request.GET.get("partial")
        else "simulation/whatif_detail.html"
    )
    return render(request, template, context)


def _csv(run: WhatIfRun, table: str) -> HttpResponse:
    """``table=ablation``: the ablation rows; otherwise the side-by-side table."""
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    writer = csv_writer(response)
    # Headers and keys are stable identifiers: not translated.
    if table == "ablation":
        response["Content-Disposition"] = f'attachment; filename="whatif-{run.pk}-ablation.csv"'
        keys = [key for key, _label, _fmt in ABLATION_COLUMNS]
        writer.writerow(("name", "placement", *FEATURE_NAMES, *keys))
        for row in (run.result or {}).get("ablation") or []:
            features = row.get("features", {})
            writer.writerow(
                (
                    row["name"],
                    row.get("placement", ""),
                    *(features.get(k, "") for k in FEATURE_NAMES),
                    *("" if row.get(k) is None else row[k] for k in keys),
                )
            )
        return response
    response["Content-Disposition"] = f'attachment; filename="whatif-{run.pk}.csv"'
    stat = ("min", "max", "ci95_low", "ci95_high")
    writer.writerow(
        (
            "metric",
            "split",
            "unified",
            *(f"{p}_{k}" for p in POLICIES for k in stat),
            "unified_minus_split",
            *(f"unified_minus_split_{k}" for k in stat),
            "seeds",
        )
    )
    if run.result:
        spread = run.result.get("spread") or {}
        seeds = " ".join(str(x) for x in run.result.get("seeds", [run.seed]))
        for row in _table(run.result):
            per = [spread.get(p, {}).get(row["key"], {}) for p in POLICIES]
            d = row["diff"] or {}
            writer.writerow(
                (
                    row["key"],
                    row["split"],
                    row["unified"],
                    *(st.get(k, "") for st in per for k in stat),
                    d.get("mean", ""),
                    *(d.get(k, "") for k in stat),
                    seeds,
                )
            )
    return response
