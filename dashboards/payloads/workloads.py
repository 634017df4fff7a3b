"""Workload payloads: the list table and one workload's KPIs and charts."""

from __future__ import annotations

from django.utils.translation import gettext as _

from dashboards import charts
from dashboards.payloads.common import kpi, scaled, series_table, table
from dashboards.selectors.workloads import WorkloadDetail, WorkloadRow
from inventory.models import Workload

LIST_COLUMNS = (
    "id",
    "name",
    "tenant",
    "kind",
    "criticality",
    "cluster",
    "cards",
    "training_samples_per_second",
    "training_mfu_ratio",
    "training_progress_ratio",
    "inference_requests_per_second",
    "inference_latency_p99_ms",
    "slo_p99_ms",
    "inference_slo_attainment_ratio",
)


def _ms(value: float | None) -> float | None:
    return None if value is None else value * 1000


def workload_list_table(rows: list[WorkloadRow]) -> dict:
    labels = [
        _("id"),
        _("workload"),
        _("tenant"),
        _("kind"),
        _("criticality"),
        _("cluster"),
        _("cards"),
        _("samples/s"),
        _("MFU"),
        _("progress"),
        _("requests/s"),
        _("P99 (ms)"),
        _("SLO P99 (ms)"),
        _("SLO attainment"),
    ]
    body = []
    for row in rows:
        w, v = row.workload, row.values
        body.append(
            [
                w.pk,
                w.name,
                w.tenant.slug,
                w.kind,
                w.criticality,
                w.cluster.name,
                v.get("workload_allocated_cards"),
                v.get("training_samples_per_second"),
                v.get("training_mfu_ratio"),
                v.get("training_progress_ratio"),
                v.get("inference_request_rate_per_second"),
                _ms(v.get("inference_latency_p99_seconds")),
                w.slo_p99_ms,
                v.get("inference_slo_attainment_ratio"),
            ]
        )
    return table(LIST_COLUMNS, labels, body)


def workload_detail_payload(detail: WorkloadDetail) -> dict:
    w, v, s = detail.workload, detail.values, detail.series
    if w.kind == Workload.Kind.TRAINING:
        kpis = [
            kpi("cards", _("Cards"), v.get("workload_allocated_cards"), "count"),
            kpi("samples", _("Samples/s"), v.get("training_samples_per_second"), "count"),
            kpi("mfu", _("MFU"), v.get("training_mfu_ratio"), "ratio"),
            kpi("progress", _("Progress"), v.get("training_progress_ratio"), "ratio"),
            kpi(
                "queue_wait",
                _("Time queued"),
                v.get("training_queue_wait_seconds_total"),
                "seconds",
            ),
            kpi("preemptions", _("Preemptions"), v.get("training_preemptions_total"), "count"),
            kpi(
                "communication",
                _("Communication share"),
                v.get("training_communication_ratio"),
                "ratio",
            ),
        ]
        figures = {
            "throughput": charts.timeseries(
                {_("samples/s"): s["training_samples_per_second"]},
                title=_("Training throughput"),
                y_title=_("samples/s"),
            ),
            "mfu": charts.timeseries(
                {_("MFU"): s["training_mfu_ratio"], _("progress"): s["training_progress_ratio"]},
                title=_("MFU and progress"),
                y_format=".0%",
            ),
            "cards": charts.timeseries(
                {_("cards"): s["workload_allocated_cards"]},
                title=_("Cards held"),
                y_title=_("cards"),
            ),
        }
        tables = {
            "throughput": series_table({"samples_per_second": s["training_samples_per_second"]}),
            "mfu": series_table(
                {
                    "mfu_ratio": s["training_mfu_ratio"],
                    "progress_ratio": s["training_progress_ratio"],
                }
            ),
            "cards": series_table({"cards": s["workload_allocated_cards"]}),
        }
    else:
        slo_p99 = w.slo_p99_ms / 1000 if w.slo_p99_ms else None
        slo_ttft = w.slo_ttft_ms / 1000 if w.slo_ttft_ms else None
        kpis = [
            kpi("replicas", _("Replicas"), v.get("inference_replicas"), "count"),
            kpi("cards", _("Cards"), v.get("workload_allocated_cards"), "count"),
            kpi("qps", _("Requests/s"), v.get("inference_request_rate_per_second"), "count"),
            kpi("p50", _("P50 latency"), v.get("inference_latency_p50_seconds"), "seconds_as_ms"),
            kpi(
                "p99",
                _("P99 latency"),
                v.get("inference_latency_p99_seconds"),
                "seconds_as_ms",
                hint=_("SLO %(ms)s ms") % {"ms": f"{w.slo_p99_ms:,.0f}"} if w.slo_p99_ms else "",
            ),
            kpi(
                "ttft",
                _("TTFT P99"),
                v.get("inference_ttft_p99_seconds"),
                "seconds_as_ms",
                hint=_("SLO %(ms)s ms") % {"ms": f"{w.slo_ttft_ms:,.0f}"} if w.slo_ttft_ms else "",
            ),
            kpi("slo", _("SLO attainment"), v.get("inference_slo_attainment_ratio"), "ratio"),
        ]
        latency = {
            _("P50"): scaled(s["inference_latency_p50_seconds"], 1000),
            _("P99"): scaled(s["inference_latency_p99_seconds"], 1000),
            _("TTFT P99"): scaled(s["inference_ttft_p99_seconds"], 1000),
        }
        stamps = [ts for ts, _v in s["inference_latency_p99_seconds"]]
        if slo_p99 and stamps:
            latency[_("SLO P99")] = [(stamps[0], slo_p99 * 1000), (stamps[-1], slo_p99 * 1000)]
        if slo_ttft and stamps:
            latency[_("SLO TTFT")] = [(stamps[0], slo_ttft * 1000), (stamps[-1], slo_ttft * 1000)]
        figures = {
            "traffic": charts.timeseries(
                {
                    _("requests/s"): s["inference_request_rate_per_second"],
                    _("replicas"): s["inference_replicas"],
                },
                title=_("Traffic and replicas"),
            ),
            "latency": charts.timeseries(latency, title=_("Latency vs SLO"), y_title="ms"),
            "slo": charts.timeseries(
                {_("SLO attainment"): s["inference_slo_attainment_ratio"]},
                title=_("SLO attainment"),
                y_format=".0%",
            ),
        }
        tables = {
            "traffic": series_table(
                {
                    "requests_per_second": s["inference_request_rate_per_second"],
                    "replicas": s["inference_replicas"],
                }
            ),
            "latency": series_table(
                {
                    "p50_seconds": s["inference_latency_p50_seconds"],
                    "p99_seconds": s["inference_latency_p99_seconds"],
                    "ttft_p99_seconds": s["inference_ttft_p99_seconds"],
                }
            ),
            "slo": series_table({"slo_attainment_ratio": s["inference_slo_attainment_ratio"]}),
        }
    return {"kpis": kpis, "figures": figures, "tables": tables, "state": detail.state}
