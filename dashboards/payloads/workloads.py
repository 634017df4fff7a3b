"""Workload payloads: the list table and one workload's KPIs and charts."""

from __future__ import annotations

import numpy as np
from django.utils.translation import gettext as _

from cluster_portal.web.units import duration
from dashboards import charts
from dashboards.payloads.common import kpi, series_table, table, whole_requests
from dashboards.selectors.workloads import WorkloadColumns, WorkloadDetail, cells
from inventory.models import Workload

LIST_COLUMNS = (
    "id",
    "name",
    "tenant",
    "kind",
    "state",
    "criticality",
    "cluster",
    "cards",
    "training_samples_per_second",
    "training_mfu_ratio",
    "training_progress_ratio",
    "inference_requests_per_second",
    "inference_ttft_p99_ms",
    "slo_ttft_ms",
    "inference_tpot_p99_ms",
    "slo_tpot_ms",
    "inference_e2e_p99_ms",
    "inference_slo_attainment_ratio",
    "inference_queue_backlog_requests",
    "inference_timeouts_total",
)


def workload_list_table(columns: WorkloadColumns, states: np.ndarray) -> dict:
    """The list as a table; ``states`` are :func:`workload_states` keys (aligned rows)."""
    labels = [
        _("id"),
        _("workload"),
        _("tenant"),
        _("kind"),
        _("state"),
        _("criticality"),
        _("cluster"),
        _("cards"),
        _("samples/s"),
        _("MFU"),
        _("progress"),
        _("requests/s"),
        _("TTFT P99"),
        _("TTFT SLO"),
        _("TPOT P99"),
        _("TPOT SLO"),
        _("end-to-end P99"),
        _("SLO attainment"),
        _("queued requests"),
        _("timed out"),
    ]
    w, v = columns.workloads, columns.values
    # Column by column (a fleet lists a few thousand workloads), then zipped into rows.
    body_columns = [
        [x.pk for x in w],
        [x.name for x in w],
        [x.tenant_slug for x in w],
        [x.kind for x in w],
        list(states),
        [x.criticality for x in w],
        [x.cluster_name for x in w],
        cells(v["workload_allocated_cards"]),
        cells(v["training_samples_per_second"]),
        cells(v["training_mfu_ratio"]),
        cells(v["training_progress_ratio"]),
        cells(v["inference_request_rate_per_second"]),
        cells(v["inference_ttft_p99_seconds"] * 1000),
        [x.slo_ttft_ms for x in w],
        cells(v["inference_tpot_p99_seconds"] * 1000),
        [x.slo_tpot_ms for x in w],
        cells(v["inference_latency_p99_seconds"] * 1000),
        cells(v["inference_slo_attainment_ratio"]),
        cells(v["inference_queue_backlog_requests"]),
        cells(np.round(v["inference_timeouts_total"])),  # whole requests (whole_requests)
    ]
    body = [list(row) for row in zip(*body_columns, strict=True)]
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

        def slo_hint(ms: float | None) -> str:
            return _("SLO %(value)s") % {"value": duration(ms / 1000)} if ms else ""

        kpis = [
            kpi("replicas", _("Replicas"), v.get("inference_replicas"), "count"),
            kpi("cards", _("Cards"), v.get("workload_allocated_cards"), "count"),
            kpi("qps", _("Requests/s"), v.get("inference_request_rate_per_second"), "count"),
            kpi(
                "ttft",
                _("TTFT P99"),
                v.get("inference_ttft_p99_seconds"),
                "seconds_as_ms",
                hint=slo_hint(w.slo_ttft_ms),
            ),
            kpi(
                "tpot",
                _("TPOT P99"),
                v.get("inference_tpot_p99_seconds"),
                "seconds_as_ms",
                hint=slo_hint(w.slo_tpot_ms),
            ),
            kpi("ttft_p50", _("TTFT P50"), v.get("inference_ttft_p50_seconds"), "seconds_as_ms"),
            kpi("tpot_p50", _("TPOT P50"), v.get("inference_tpot_p50_seconds"), "seconds_as_ms"),
            kpi(
                "p99",
                _("End-to-end P99"),
                v.get("inference_latency_p99_seconds"),
                "seconds_as_ms",
                hint=slo_hint(w.slo_p99_ms),
            ),
            kpi(
                "slo",
                _("SLO attainment (TTFT and TPOT)"),
                v.get("inference_slo_attainment_ratio"),
                "ratio",
            ),
            kpi(
                "backlog",
                _("Queued requests (backlog)"),
                v.get("inference_queue_backlog_requests"),
                "count",
            ),
            kpi(
                "timeouts",
                _("Requests timed out (since start)"),
                whole_requests(v.get("inference_timeouts_total")),
                "count",
            ),
        ]

        def with_target(lines: dict, label: str, points, target_ms: float | None) -> dict:
            stamps = [ts for ts, _v in points]
            if target_ms and stamps:
                target = target_ms / 1000  # the chart is in seconds, its axis shows ms/s
                lines[label] = [(stamps[0], target), (stamps[-1], target)]
            return lines

        ttft_lines = with_target(
            {_("TTFT P99"): s["inference_ttft_p99_seconds"]},
            _("TTFT SLO"),
            s["inference_ttft_p99_seconds"],
            w.slo_ttft_ms,
        )
        tpot_lines = with_target(
            {_("TPOT P99"): s["inference_tpot_p99_seconds"]},
            _("TPOT SLO"),
            s["inference_tpot_p99_seconds"],
            w.slo_tpot_ms,
        )
        e2e_lines = with_target(
            {_("end-to-end P99"): s["inference_latency_p99_seconds"]},
            _("end-to-end SLO"),
            s["inference_latency_p99_seconds"],
            w.slo_p99_ms,
        )
        figures = {
            "traffic": charts.timeseries(
                {
                    _("requests/s"): s["inference_request_rate_per_second"],
                    _("replicas"): s["inference_replicas"],
                },
                title=_("Traffic and replicas"),
            ),
            "latency": charts.timeseries(ttft_lines, title=_("TTFT P99 vs SLO"), y_unit="seconds"),
            "tpot": charts.timeseries(tpot_lines, title=_("TPOT P99 vs SLO"), y_unit="seconds"),
            "e2e": charts.timeseries(
                e2e_lines, title=_("End-to-end P99 (secondary)"), y_unit="seconds"
            ),
            "backlog": charts.timeseries(
                {_("queued requests"): s["inference_queue_backlog_requests"]},
                title=_("Queue backlog"),
                y_title=_("requests"),
            ),
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
            "latency": series_table({"ttft_p99_seconds": s["inference_ttft_p99_seconds"]}),
            "tpot": series_table({"tpot_p99_seconds": s["inference_tpot_p99_seconds"]}),
            "e2e": series_table({"e2e_p99_seconds": s["inference_latency_p99_seconds"]}),
            "backlog": series_table({"backlog_requests": s["inference_queue_backlog_requests"]}),
            "slo": series_table({"slo_attainment_ratio": s["inference_slo_attainment_ratio"]}),
        }
    return {"kpis": kpis, "figures": figures, "tables": tables, "state": detail.state}
