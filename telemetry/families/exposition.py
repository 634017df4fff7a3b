"""Prometheus text (format 0.0.4) ingestion for dcgm-exporter and Ascend npu-exporter output.

The stable import path for the service layer; the code lives in ``prometheus_parse`` (tokenizer)
and ``prometheus_map`` (catalogue mapping). Pure Python: no Django, no database.
"""

from __future__ import annotations

from telemetry.families.mapping import (
    MAPPED_METRICS,
    EntityRef,
    MappedSample,
    MappingReport,
    PrometheusMappingError,
    map_exposition,
    map_samples,
)
from telemetry.families.parse import (
    ParsedSample,
    ParseLimits,
    PrometheusParseError,
    parse_text,
)

__all__ = [
    "MAPPED_METRICS",
    "EntityRef",
    "MappedSample",
    "MappingReport",
    "ParseLimits",
    "ParsedSample",
    "PrometheusMappingError",
    "PrometheusParseError",
    "map_exposition",
    "map_samples",
    "parse_text",
]
