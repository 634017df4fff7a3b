"""What-if pages: start a run, watch its progress live, compare the two policies."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.access import operator_page
from cluster_portal.web.csv import csv_writer
from cost import charts
from simulation.models import WhatIfRun
from simulation.services.whatif import whatif_create
from simulation.services.whatif_run import POLICIES
from simulation.whatif_forms import WhatIfForm

# (summary key, label, format) of the side-by-side table; keys from the engine's summary.
ROWS = (
    ("utilization_allocated_mean", gettext_lazy("allocated utilization"), "pct"),
    ("utilization_busy_mean", gettext_lazy("busy utilization"), "pct"),
    ("training_samples_per_s_mean", gettext_lazy("training samples/s"), "num"),
    ("mfu_mean", gettext_lazy("MFU (running training)"), "pct"),
    ("inference_p50_ms", gettext_lazy("inference P50 (ms)"), "num"),
    ("inference_p99_ms", gettext_lazy("inference P99 (ms)"), "num"),
    ("ttft_p99_ms", gettext_lazy("TTFT P99 (ms)"), "num"),
    ("slo_attainment", gettext_lazy("SLO attainment"), "pct"),
    ("hbm_live_fraction_mean", gettext_lazy("HBM live fraction"), "pct"),
    ("preemptions", gettext_lazy("preemptions"), "num"),
    ("completed_jobs", gettext_lazy("completed jobs"), "num"),
    ("energy_mwh", gettext_lazy("energy (MWh, facility)"), "num"),
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
                trace_kind=data["trace_kind"],
                trace_name=data["trace_name"],
                trace_text=data["trace_text"],
                created_by=request.user,
            )
            messages.success(request, _("What-if run %(id)s queued.") % {"id": run.pk})
            return redirect("whatif-detail", pk=run.pk)
    runs = WhatIfRun.objects.select_related("created_by").defer("trace_text", "result")[:20]
    status = 400 if form.errors else 200
    return render(request, "simulation/whatif.html", {"form": form, "runs": runs}, status=status)


def _table(result: dict) -> list[dict]:
    rows = []
    for key, label, fmt in ROWS:
        split, unified = (result["summary"][p].get(key) for p in POLICIES)
        rows.append({"key": key, "label": label, "fmt": fmt, "split": split, "unified": unified})
    return rows


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
        return _csv(run)
    context = {"run": run, "percent": round(run.progress * 100)}
    if run.status == WhatIfRun.Status.DONE and run.result:
        context["rows"] = _table(run.result)
        context["figures"] = _figures(run.result)
        context["scenario"] = run.result.get("scenario", {})
    template = (
        "simulation/_whatif_body.html"
        if request.GET.get("partial")
        else "simulation/whatif_detail.html"
    )
    return render(request, template, context)


def _csv(run: WhatIfRun) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="whatif-{run.pk}.csv"'
    writer = csv_writer(response)
    writer.writerow(("metric", "split", "unified"))  # stable identifiers: not translated
    if run.result:
        for row in _table(run.result):
            writer.writerow((row["key"], row["split"], row["unified"]))
    return response
