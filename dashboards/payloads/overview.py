"""Overview payload: KPI tiles and the cluster's utilization and throughput curves."""

from __future__ import annotations

from django.utils.translation import gettext as _

from cluster_portal.web.units import duration, format_value, integer
from dashboards import charts
from dashboards.payloads.common import kpi, series_table, source_text, table, whole_requests
from dashboards.payloads.simclock import add_simulated_clock, clock_text
from dashboards.selectors.day_night import CLASSES, DayNight
from dashboards.selectors.overview import OverviewData
from dashboards.selectors.service_slo import LATENCIES, ServiceSlo, Worst

TTFT, TPOT, E2E = LATENCIES


def _scope(slo: ServiceSlo | None) -> str:
    """The window and the set every serving tile is computed over, in words."""
    if slo is None or not slo.services:
        return _("no service served requests in the last %(window)s") % {
            "window": duration(slo.window_seconds if slo else None)
        }
    return _("last %(window)s, the same %(n)s services with traffic") % {
        "window": duration(slo.window_seconds),
        "n": integer(slo.services),
    }


def _serving(key: str, label: str, slo: ServiceSlo | None, worst: Worst | None, unit: str):
    """A worst-service tile with the request-weighted figure over the same services."""
    if worst is None:
        return kpi(key, label, None, unit, hint=_scope(slo))
    shown = format_value(worst.weighted, "ratio" if unit == "ratio" else "seconds")
    if worst.exact:  # percentiles of the window's requests (merged histograms)
        hint = _("worst: %(service)s; all requests %(weighted)s · %(scope)s") % {
            "service": worst.service,
            "weighted": shown,
            "scope": _scope(slo),
        }
    elif unit == "ratio":
        hint = _("worst: %(service)s; request-weighted %(weighted)s · %(scope)s") % {
            "service": worst.service,
            "weighted": shown,
            "scope": _scope(slo),
        }
    else:
        hint = _(
            "worst: %(service)s; request-weighted %(weighted)s · %(scope)s · mean of "
            "per-step P99s (approximation: no histogram in the window)"
        ) % {"service": worst.service, "weighted": shown, "scope": _scope(slo)}
    return kpi(key, label, worst.value, unit, hint=hint)


# The cluster figure behind each tile (its source is shown next to it).
KPI_METRICS = {
    "cards_healthy": "cluster_cards_healthy",
    "utilization_busy": "cluster_utilization_busy_ratio",
    "utilization_allocated": "cluster_utilization_allocated_ratio",
    "mfu": "cluster_mfu_ratio",
    "training_samples": "cluster_training_samples_per_second",
    "inference_tokens": "cluster_inference_tokens_per_second",
    "queue_backlog": "cluster_inference_queue_backlog_requests",
    "timeouts": "cluster_inference_timeouts_total",
    "hbm_live": "cluster_hbm_live_ratio",
    "hbm_reserved": "cluster_hbm_reserved_ratio",
    "twin_lag": "twin_tick_lag_seconds",
}


def _source_note(item: dict, source: str | None) -> None:
    if not source or item["value"] is None:
        return
    item["source"] = source
    item["hint"] = " · ".join(part for part in (item["hint"], source_text(source)) if part)


def _titled(title: str, sources: dict[str, str], name: str) -> str:
    """A chart's title with where its curve came from, when that is not the twin."""
    source = sources.get(f"series:{name}")
    if not source or source == "twin":
        return str(title)
    return f"{title} ({source_text(source)})"


def _cards_source(data: OverviewData) -> str:
    """Where the training/inference split comes from, in words (the twin, or the scheduler)."""
    if data.sources.get("series:cluster_cards_split") == "scheduler" and data.day_night:
        return _scheduler_words(data.day_night)
    return source_text(data.sources.get("series:cluster_cards_healthy") or "twin")


def _scheduler_words(day_night: DayNight) -> str:
    return str(
        _("from the Kubernetes scheduler's allocation")
        if day_night.source_kind == "kubernetes"
        else _("from the Slurm scheduler's allocation")
    )


def day_night_payload(day_night: DayNight) -> tuple[dict, dict, dict]:
    """The scheduler's day/night curve: a by-hour-of-day chart, its table and the words
    that say how it was made (source, classification, approximation)."""
    names = {
        ("training", "allocated"): _("training, allocated"),
        ("training", "busy"): _("training, busy"),
        ("inference", "allocated"): _("inference, allocated"),
        ("inference", "busy"): _("inference, busy"),
    }
    groups = {}
    for kind in CLASSES:
        groups[names[(kind, "allocated")]] = day_night.by_hour_allocated.get(kind, [])
        groups[names[(kind, "busy")]] = day_night.by_hour_busy.get(kind, [])
    hours = [f"{h:02d}:00" for h in range(24)]
    figure = charts.bars(
        hours,
        groups,
        title=_("Cards by hour of day: allocated vs busy (%(source)s)")
        % {"source": _scheduler_words(day_night)},
        y_title=_("cards (mean)"),
    )
    rows = [
        [hour, *(day_night.by_hour_allocated[k][i] for k in CLASSES),
         *(day_night.by_hour_busy[k][i] for k in CLASSES)]
        for i, hour in enumerate(hours)
    ]  # fmt: skip
    csv = table(
        ["hour_of_day", "training_allocated_cards", "inference_allocated_cards",
         "training_busy_cards", "inference_busy_cards"],
        [_("hour of day"), _("training, allocated"), _("inference, allocated"),
         _("training, busy"), _("inference, busy")],
        rows,
    )  # fmt: skip
    about = {
        "source": day_night.source_kind,
        "source_text": _scheduler_words(day_night),
        "inference_words": list(day_night.inference_words),
        "classification": _(
            "A job is inference when its partition or queue name contains %(words)s, "
            "training otherwise."
        )
        % {"words": ", ".join(f"“{w}”" for w in day_night.inference_words) or "—"},
        "approximation": _(
            "Allocated: the card-seconds the scheduler's allocations cover in each hour, "
            "as mean cards. Busy: each held card-second weighted by that card's mean "
            "measured utilization over the whole hour (an approximation). Held cards "
            "without a reading: %(unmeasured)s card-hours, counted as allocated, not busy."
        )
        % {"unmeasured": format_value(day_night.unmeasured_card_hours, "count")},
        "unmeasured_card_hours": day_night.unmeasured_card_hours,
        "unclassified_card_hours": day_night.unclassified_card_hours,
    }
    return figure, csv, about


def overview_payload(data: OverviewData) -> dict:
    k, s = data.kpis, data.series
    src = data.sources
    slo = data.slo
    latency = slo.latency if slo else {}
    healthy, total = k.get("cluster_cards_healthy"), k.get("cluster_cards_total")
    kpis = [
        kpi(
            "cards_healthy",
            _("Healthy / total cards"),
            healthy,
            "count",
            hint=_("of %(total)s") % {"total": integer(total)},
        ),
        kpi(
            "utilization_busy",
            _("Utilization (busy)"),
            k.get("cluster_utilization_busy_ratio"),
            "ratio",
        ),
        kpi(
            "utilization_allocated",
            _("Allocated"),
            k.get("cluster_utilization_allocated_ratio"),
            "ratio",
        ),
        kpi("mfu", _("MFU (training)"), k.get("cluster_mfu_ratio"), "ratio"),
        kpi(
            "training_samples",
            _("Training samples/s"),
            k.get("cluster_training_samples_per_second"),
            "count",
        ),
        kpi(
            "inference_tokens",
            _("Inference tokens/s"),
            k.get("cluster_inference_tokens_per_second"),
            "count",
        ),
        _serving("ttft", _("TTFT P99 (worst service)"), slo, latency.get(TTFT), "seconds_as_ms"),
        _serving("tpot", _("TPOT P99 (worst service)"), slo, latency.get(TPOT), "seconds_as_ms"),
        _serving(
            "p99_latency",
            _("End-to-end P99 (worst service)"),
            slo,
            latency.get(E2E),
            "seconds_as_ms",
        ),
        kpi(
            "queue_backlog",
            _("Queued requests (backlog)"),
            k.get("cluster_inference_queue_backlog_requests"),
            "count",
        ),
        kpi(
            "timeouts",
            _("Requests timed out (since start)"),
            whole_requests(k.get("cluster_inference_timeouts_total")),
            "count",
        ),
        _serving(
            "slo_attainment",
            _("SLO attainment (worst service, TTFT and TPOT)"),
            slo,
            slo.attainment if slo else None,
            "ratio",
        ),
        kpi(
            "hbm_live",
            _("HBM live"),
            k.get("cluster_hbm_live_ratio"),
            "ratio",
        ),
        kpi(
            "hbm_reserved",
            _("HBM reserved"),
            k.get("cluster_hbm_reserved_ratio"),
            "ratio",
        ),
        kpi("open_alerts", _("Open alerts"), float(data.open_alerts), "count"),
        kpi(
            "twin_lag",
            _("Twin tick lag"),
            k.get("twin_tick_lag_seconds"),
            "seconds",
        ),
    ]
    exporters_only = bool(src) and "twin" not in src.values()
    for item in kpis:
        _source_note(item, src.get(KPI_METRICS.get(item["key"], "")))
        if exporters_only and item["value"] is None and item["key"] in KPI_METRICS:
            # Card samples carry no allocation, throughput or twin clock: say why it is empty.
            item["hint"] = " · ".join(
                part for part in (item["hint"], str(_("not reported by card exporters"))) if part
            )
    hour = k.get("twin_simulated_hour_of_day")
    if hour is not None:
        night = (k.get("twin_night_window_active") or 0) >= 0.5
        kpis.append(
            {
                "key": "simulated_clock",
                "label": str(_("Twin's simulated time of day")),
                "value": hour,
                "unit": "hours",
                "display": clock_text(hour),
                "hint": str(_("(simulated night)") if night else _("(simulated day)")),
            }
        )
    util = {
        _("allocated / healthy cards"): s["cluster_utilization_allocated_ratio"],
        _("busy (mean card utilization)"): s["cluster_utilization_busy_ratio"],
    }
    cards_stacked = {
        _("training cards"): s.get("training_cards", []),
        _("inference cards"): s.get("inference_cards", []),
    }
    cards_lines = {_("healthy cards"): s["cluster_cards_healthy"]}
    figures = {
        "utilization": charts.timeseries(
            util,
            title=_titled(
                _("Utilization: allocated vs busy"), src, "cluster_utilization_busy_ratio"
            ),
            y_title=_("share"),
            y_format=".0%",
        ),
        "cards": charts.utilization_area(
            cards_stacked,
            lines=cards_lines,
            title=" ".join(
                part
                for part in (
                    str(_("Cards allocated to training and inference")),
                    f"({_cards_source(data)})" if _cards_source(data) else "",
                )
                if part
            ),
            y_title=_("cards"),
        ),
        "training_throughput": charts.timeseries(
            {_("samples/s"): s["cluster_training_samples_per_second"]},
            title=_("Training throughput"),
            y_title=_("samples/s"),
            y_unit="count",
        ),
        "inference_throughput": charts.timeseries(
            {_("tokens/s"): s["cluster_inference_tokens_per_second"]},
            title=_("Inference throughput"),
            y_title=_("tokens/s"),
            y_unit="count",
        ),
        "latency": charts.timeseries(
            {
                _("TTFT P99"): s.get("cluster_inference_ttft_p99_seconds", []),
                _("TPOT P99"): s.get("cluster_inference_tpot_p99_seconds", []),
            },
            # Per step, as the twin stores it: a chart of per-step values, not a window's P99.
            title=_("Serving latency per step (request-weighted mean of service P99s)"),
            y_unit="seconds",
        ),
    }
    sim_clock = add_simulated_clock(
        figures,
        s.get("twin_simulated_hour_of_day", []),
        s.get("twin_night_window_active", []),
    )
    tables = {
        "simulated_clock": series_table(
            {
                "simulated_hour_of_day": s.get("twin_simulated_hour_of_day", []),
                "night_window_active": s.get("twin_night_window_active", []),
            }
        ),
        "kpis": table(
            ["kpi", "value"],
            [_("figure"), _("value")],
            [[item["key"], item["value"]] for item in kpis],
        ),
        "utilization": series_table(
            {
                "allocated_ratio": s["cluster_utilization_allocated_ratio"],
                "busy_ratio": s["cluster_utilization_busy_ratio"],
            }
        ),
        "cards": series_table(
            {
                "training_cards": s.get("training_cards", []),
                "inference_cards": s.get("inference_cards", []),
                "healthy_cards": s["cluster_cards_healthy"],
            }
        ),
        "training_throughput": series_table(
            {"samples_per_second": s["cluster_training_samples_per_second"]}
        ),
        "inference_throughput": series_table(
            {"tokens_per_second": s["cluster_inference_tokens_per_second"]}
        ),
        "latency": series_table(
            {
                "ttft_p99_seconds": s.get("cluster_inference_ttft_p99_seconds", []),
                "tpot_p99_seconds": s.get("cluster_inference_tpot_p99_seconds", []),
            }
        ),
    }
    payload = {"kpis": kpis, "figures": figures, "tables": tables, "simulated_clock": sim_clock}
    payload["day_night"] = None
    if data.day_night is not None:
        figures["day_night"], tables["day_night"], payload["day_night"] = day_night_payload(
            data.day_night
        )
    return payload
