"""The one-page validation report: baseline (split/legacy) vs unified over a window, every
figure with its source, and the data behind each figure as CSV."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _

from accounts.access import staff_page
from cluster_portal.web.csv import csv_writer
from cluster_portal.web.timerange import PRESET_LABELS, TimeRangeError, parse_timerange
from cost import charts
from dashboards.selectors.report import (
    CURVE_METRICS,
    HBM_METRIC,
    ClusterFigures,
    Decision,
    ReportRefused,
    ratio,
    report_decision,
)
from dashboards.selectors.report_decision import default_range
from inventory.models import Cluster
from inventory.selectors import defaults_first
from telemetry.read import cluster_series

FIGURES = ("samples", "ttft", "tpot", "p99", "utilization", "hbm", "cost")


def _choose(request: HttpRequest) -> tuple[Cluster | None, Cluster | None]:
    clusters = {str(c.pk): c for c in Cluster.objects.select_related("hardware_model")}
    ordered = defaults_first(clusters.values())
    baseline = next((c for c in ordered if c.kind != Cluster.Kind.UNIFIED), None)
    unified = next((c for c in ordered if c.kind == Cluster.Kind.UNIFIED), None)
    return (
        clusters.get(request.GET.get("baseline", ""), baseline),
        clusters.get(request.GET.get("unified", ""), unified),
    )


@staff_page
def validation_report(request: HttpRequest) -> HttpResponse:
    params = request.GET.copy()
    if not params.get("range") and not params.get("start"):
        params["range"] = default_range()  # the report's default window
    context: dict = {
        "clusters": Cluster.objects.order_by("name"),
        "presets": PRESET_LABELS.items(),
    }
    try:
        window = parse_timerange(params)
    except TimeRangeError as error:
        context["range_errors"] = error.errors
        return render(request, "dashboards/report.html", context, status=400)
    baseline, unified = _choose(request)
    context.update({"window": window, "baseline": baseline, "unified": unified})
    if baseline is None or unified is None:
        return render(request, "dashboards/report.html", context)
    try:
        decision = report_decision(baseline, unified, window.start, window.end)
    except ReportRefused as refused:
        # Nothing computed on the part of the window that is left: no figure, no verdict.
        if request.GET.get("format") == "csv":
            return HttpResponse(str(refused), status=400, content_type="text/plain; charset=utf-8")
        context["refusal"] = str(refused)
        return render(request, "dashboards/report.html", context, status=400)
    base, uni = decision.base, decision.uni
    if request.GET.get("format") == "csv":
        return _csv(request.GET.get("figure", ""), decision)
    comparable = decision.compared is not None

    def compared(u: float | None, b: float | None) -> float | None:
        # No span where both sides have data: no ratio (the page says why).
        return ratio(u, b) if comparable else None

    context.update(
        {
            "decision": decision,
            "base": base,
            "uni": uni,
            "samples_ratio": compared(
                uni.samples.mean if uni.samples else None,
                base.samples.mean if base.samples else None,
            ),
            "p99_ratio": compared(_exact(uni.p99), _exact(base.p99)),
            # Like for like across cluster sizes: per card the work held (stated on the page).
            "per_card_ratio": compared(uni.samples_per_card, base.samples_per_card),
            "tokens_per_card_ratio": compared(uni.tokens_per_card, base.tokens_per_card),
            "ttft_ratio": compared(_exact(uni.ttft), _exact(base.ttft)),
            "tpot_ratio": compared(_exact(uni.tpot), _exact(base.tpot)),
            "latency_rows": (
                (_("TTFT P99 (time to first token)"), "ttft", base.ttft, uni.ttft),
                (_("TPOT P99 (time per output token)"), "tpot", base.tpot, uni.tpot),
                (_("End-to-end P99 (secondary)"), "p99", base.p99, uni.p99),
            ),
            "ablation": decision.ablation,
            "overrides": decision.overrides,
            "curve_figure": _curve_figure(base, uni),
            "hbm_figure": _hbm_figure(base, uni),
            "csv_query": window.as_query() | {"baseline": baseline.pk, "unified": unified.pk},
            "curve_metrics": CURVE_METRICS,
            "hbm_metric": HBM_METRIC,
        }
    )
    return render(request, "dashboards/report.html", context)


def _exact(p) -> float | None:
    """A percentile's seconds when it is one (an approximation gives no ratio)."""
    return p.seconds if p.exact else None


def _points(series) -> tuple[list, list]:
    if series is None:
        return [], []
    return [p.ts for p in series.points], [p.mean for p in series.points]


def _curve_figure(base: ClusterFigures, uni: ClusterFigures) -> dict:
    return charts.lines(
        _("Allocated utilization"),
        {
            base.cluster.name: _points(base.curves[CURVE_METRICS[0]]),
            uni.cluster.name: _points(uni.curves[CURVE_METRICS[0]]),
        },
        _("allocated / healthy cards"),
        percent=True,
    )


def _hbm_figure(base: ClusterFigures, uni: ClusterFigures) -> dict:
    return charts.lines(
        _("HBM live / capacity"),
        {base.cluster.name: _points(base.hbm_series), uni.cluster.name: _points(uni.hbm_series)},
        _("ratio"),
        percent=True,
    )


class _Compared:
    """A CSV writer that ends every row with the compared window (the report's one coverage
    statement): each row says which window its figure was computed over."""

    def __init__(self, writer, decision: Decision):
        self.writer = writer
        lo, hi = decision.compared or (None, None)
        self.tail = (
            lo.isoformat() if lo else "",
            hi.isoformat() if hi else "",
            decision.compared_seconds,
            decision.window_seconds,
        )
        self.header = True

    def writerow(self, row) -> None:
        if self.header:
            self.header = False
            tail = ("compared_start", "compared_end", "compared_seconds", "window_seconds")
            self.writer.writerow((*row, *tail))
        else:
            self.writer.writerow((*row, *self.tail))


def _csv(figure: str, decision: Decision) -> HttpResponse:
    """The stored data behind one figure (column names are stable, not translated)."""
    if figure not in FIGURES:
        figure = "utilization"
    base, uni = decision.base, decision.uni
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="report-{figure}.csv"'
    writer = _Compared(csv_writer(response), decision)
    if figure in ("p99", "ttft", "tpot"):
        key = {"p99": "e2e"}.get(figure, figure)
        writer.writerow(
            (
                "cluster",
                "workload",
                "p50_seconds",
                "p95_seconds",
                "p99_seconds",
                "requests",
                "percentile_of_requests",
            )
        )
        for f in (base, uni):
            for name, side in f.serving.sides.items():
                q = side.latency[key]
                writer.writerow(
                    (
                        f.cluster.name,
                        name,
                        *(_blank(q[k].seconds) for k in ("p50", "p95", "p99")),
                        side.requests,
                        q["p99"].exact,
                    )
                )
        return response
    if figure == "cost":
        writer.writerow(("cluster", "figure", "value"))
        for f in (base, uni):
            c = f.cost
            for key, value in (
                ("asset_per_hour", c.asset.per_hour if c.asset else None),
                ("energy_source", _energy_source(c)),
                ("cost_per_1m_tokens", c.cost_per_million_tokens),
                # the load the cost per 1M tokens was measured at (as the page states it)
                ("inference_cards_held_mean", c.inference_cards_held),
                ("tokens_per_second_per_inference_card", c.tokens_per_inference_card),
                ("cost_per_1k_samples", c.cost_per_thousand_samples),
            ):  # fmt: skip
                writer.writerow((f.cluster.name, key, "" if value is None else value))
        return response
    metrics = {
        "samples": ("cluster_training_samples_per_second",),
        "utilization": CURVE_METRICS,
        "hbm": (HBM_METRIC,),
    }[figure]
    writer.writerow(("cluster", "metric", "bucket_start", "mean", "min", "max", "values"))
    for f in (base, uni):
        for metric in metrics:
            series = _series_of(f, metric)
            for p in series.points if series else []:
                writer.writerow(
                    (f.cluster.name, metric, p.ts.isoformat(), p.mean, p.min, p.max, p.count)
                )
    return response


def _blank(value):
    return "" if value is None else value


def _energy_source(c) -> str | None:
    if c.asset is None:
        return None
    return "measured" if c.asset.energy.measured else "tdp_x_load_factor"


def _series_of(f: ClusterFigures, metric: str):
    if metric in f.curves:
        return f.curves[metric]
    if metric == HBM_METRIC:
        return f.hbm_series
    return cluster_series(f.cluster, metric, f.cost.start, f.cost.end)
