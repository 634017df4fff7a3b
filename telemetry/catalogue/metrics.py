"""The portal's own metric catalogue: the metrics every source must map onto.

Exporter mappings (``telemetry.families.exposition``) and the digital twin register their
metrics here too; this list holds the ones dashboards and gates rely on by name.
"""

from __future__ import annotations

# name, unit, entity kind, type, description
CORE_METRICS: tuple[tuple[str, str, str, str, str], ...] = (
    (
        "accelerator_utilization_ratio",
        "ratio",
        "accelerator",
        "gauge",
        "Share of time the accelerator was busy (0–1).",
    ),
    ("accelerator_hbm_used_bytes", "bytes", "accelerator", "gauge", "HBM in use on the card."),
    ("accelerator_hbm_total_bytes", "bytes", "accelerator", "gauge", "HBM capacity of the card."),
    ("accelerator_temperature_celsius", "celsius", "accelerator", "gauge", "Die temperature."),
    ("accelerator_power_watts", "watts", "accelerator", "gauge", "Board power draw."),
    (
        "accelerator_health_status",
        "",
        "accelerator",
        "gauge",
        "1 healthy, 0 unhealthy, -1 unknown.",
    ),
    # Serving endpoints (telemetry.families.serving): histograms stored per bucket, read as
    # quantiles over a window; the derived figures are computed, never stored.
    (
        "serving_ttft_seconds",
        "seconds",
        "serving_endpoint",
        "gauge",
        "Time to first token: a histogram; p50/p99 over a window from its bucket increases.",
    ),
    (
        "serving_tpot_seconds",
        "seconds",
        "serving_endpoint",
        "gauge",
        "Time per output token: a histogram; p50/p99 over a window from its bucket increases.",
    ),
    (
        "serving_error_ratio",
        "ratio",
        "serving_endpoint",
        "gauge",
        "Failed ÷ finished requests over a window (increases of the request counters).",
    ),
    (
        "serving_requests_per_second",
        "requests_per_second",
        "serving_endpoint",
        "gauge",
        "Finished requests per second over a window.",
    ),
    # Written by scrape mode (telemetry.receivers.scrape) once per scrape of a target, so
    # alert rules and dashboards can see a failing exporter like any other metric.
    (
        "exporter_scrape_up",
        "",
        "exporter",
        "gauge",
        "1 when the last scrape of the exporter target succeeded, 0 when it failed.",
    ),
    (
        "exporter_scrape_duration_seconds",
        "seconds",
        "exporter",
        "gauge",
        "Wall time of one scrape of the exporter target, fetch and ingestion included.",
    ),
)


def catalogue_sync(entries: tuple = CORE_METRICS) -> int:
    """Create or update catalogue rows for ``entries``; returns how many were written."""
    from telemetry.models import MetricDefinition

    for name, unit, kind, metric_type, description in entries:
        MetricDefinition.objects.update_or_create(
            name=name,
            defaults={
                "unit": unit,
                "entity_kind": kind,
                "type": metric_type,
                "description": description,
                "mapped": True,
            },
        )
    return len(entries)
