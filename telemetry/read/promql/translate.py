"""Catalogue metrics ↔ exporter series on a PromQL server.

Queries ask for the exporter families a catalogue metric is mapped from (e.g.
``accelerator_utilization_ratio`` ← ``DCGM_FI_DEV_GPU_UTIL`` and
``npu_chip_info_utilization``); the answers go back through the ingestion mapping
(:func:`map_samples`), so units, DCGM sentinels, npu-exporter's -1, dcgm's used+free total,
host/UUID/vdie_id and entity keys are exactly what the ingestion path would have stored.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable

from telemetry.catalogue.registry import DeviceRef
from telemetry.families.exposition import MappedSample, ParsedSample, map_samples
from telemetry.families.identity import DEFAULT_HOST_LABELS
from telemetry.families.mapping import source_families
from telemetry.read.promql.client import ResultSeries

HOST_LABELS = DEFAULT_HOST_LABELS  # what ingestion uses when a cluster sets none
_VENDOR_LABEL = {"DCGM_": "UUID", "npu_": "vdie_id"}
#: Exporter family prefix → the label naming the chip, and whether MIG instances split it.
CHIP_LABELS = {"DCGM_": ("UUID", True), "npu_": ("vdie_id", False)}


def chip_label(family: str, label_map: dict[str, str]) -> str | None:
    """The server's name of the label that names ``family``'s chip, if it has one."""
    for prefix, (label, _mig) in CHIP_LABELS.items():
        if family.startswith(prefix):
            return label_map.get(label, label)
    return None


def quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def families(metric: str) -> tuple[str, ...]:
    """Exporter names for ``metric``; an unmapped catalogue name (kept from an exporter under
    its lower-cased name) is matched case-insensitively."""
    return source_families(metric) or (f"(?i){re.escape(metric)}",)


def selector(
    family: str, *, extra: str = "", label_map: dict[str, str], vendor_id: str | None = None
) -> str:
    """``{__name__=~"family", <extra matchers>[, UUID|vdie_id="..."]}``."""
    matchers = [f"__name__=~{quote(family)}"]
    if extra.strip():
        matchers.append(extra.strip().strip(","))
    if vendor_id:
        for prefix, label in _VENDOR_LABEL.items():
            if family.startswith(prefix):
                chip, instance = _mig_split(vendor_id) if prefix == "DCGM_" else (vendor_id, None)
                matchers.append(f"{label_map.get(label, label)}={quote(chip)}")
                if instance is not None:
                    gi = label_map.get("GPU_I_ID", "GPU_I_ID")
                    matchers.append(f"{gi}={quote(instance)}")
    return "{" + ",".join(matchers) + "}"


def _mig_split(vendor_id: str) -> tuple[str, str | None]:
    """A MIG slice's id is ``<UUID>/gi<GPU_I_ID>`` (docs/architecture.md §5): the server knows
    it as two labels."""
    chip, sep, instance = vendor_id.rpartition("/gi")
    return (chip, instance) if sep and chip and instance.isdigit() else (vendor_id, None)


def to_mapped(
    results: Iterable[tuple[str, ResultSeries]], *, label_map: dict[str, str]
) -> list[MappedSample]:
    """``(family asked for, result series)`` → catalogue samples via the ingestion mapping.

    Functions such as ``avg_over_time`` drop ``__name__``; the family asked for restores it.
    """
    server_to_exporter = {server: exporter for exporter, server in label_map.items()}
    parsed: list[ParsedSample] = []
    for line, (family, series) in enumerate(results, start=1):
        labels = {server_to_exporter.get(k, k): v for k, v in series.labels.items()}
        name = labels.pop("__name__", None) or family
        for ts, value in series.points:
            parsed.append(ParsedSample(name, labels, value, round(ts * 1000), line, None))
    report = map_samples(
        parsed, source="auto", default_host=None, scrape_time=time.time(), host_chain=HOST_LABELS
    )
    return report.samples


def entity_key(sample: MappedSample) -> str:
    """The entity key the ingestion path registers for this sample's entity."""
    entity = sample.entity
    if entity.kind == "accelerator":
        return DeviceRef(entity.host, entity.index, entity.vendor_id).key
    return entity.host or entity.vendor_id
