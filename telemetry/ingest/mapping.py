"""Map dcgm-exporter and Ascend npu-exporter samples onto the metric catalogue.

Formats and identity rules: docs/architecture.md §5.

Pure Python: the ingestion service turns the report into rows. Every parsed sample ends up
either in ``MappingReport.samples`` (mapped into the catalogue, or kept unmapped under its own
sanitised name) or counted under a drop reason; nothing disappears silently.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from telemetry.ingest.parse import NO_LIMITS, ParsedSample, ParseLimits, iter_text

__all__ = [
    "MAPPED_METRICS",
    "EntityRef",
    "MappedSample",
    "MappingReport",
    "PrometheusMappingError",
    "map_exposition",
    "map_samples",
    "source_families",
]

MIB = 2**20
# DCGM's "blank" values (DCGM_INT64_BLANK = 0x7ffffffffffffff0 and the NOT_FOUND/NOT_SUPPORTED
# codes above it) mean "no value". As floats they all round to 2**63, so one comparison
# catches every code without inspecting the digits.
DCGM_BLANK_SENTINEL = 9223372036854775792

MAPPED_METRICS: dict[str, tuple[str, str]] = {
    "accelerator_utilization_ratio": ("ratio", "Compute utilisation, 0-1"),
    "accelerator_hbm_used_bytes": ("bytes", "Device memory (HBM / framebuffer) in use"),
    "accelerator_hbm_total_bytes": ("bytes", "Device memory (HBM / framebuffer) capacity"),
    "accelerator_temperature_celsius": ("celsius", "Chip temperature"),
    "accelerator_power_watts": ("watts", "Power draw"),
    "accelerator_health_status": ("status", "1 healthy, 0 unhealthy, -1 unknown"),
    "accelerator_sm_clock_hertz": ("hertz", "Streaming-multiprocessor clock"),
    "accelerator_xid_last": ("code", "Last XID error reported by the driver (not a count)"),
    "accelerator_energy_joules_total": ("joules", "Energy consumed since driver load"),
    "accelerator_link_up": ("bool", "1 when the chip's network port is up, else 0"),
    "accelerator_network_receive_bytes_per_second": ("bytes_per_second", "Port receive rate"),
    "accelerator_network_transmit_bytes_per_second": ("bytes_per_second", "Port send rate"),
    "node_accelerators": ("count", "Accelerators installed in the node"),
}


@dataclass(frozen=True)
class _Rule:
    metric: str
    factor: float = 1.0
    divisor: float = 1.0  # divide rather than multiply by 0.01 so 37 % is exactly 0.37
    counter: bool = False  # the sample name may carry a `_total` appended by a client library


# npu-exporter's "MB" is taken as 2**20 bytes: its HBM capacities are powers of two
# (65536 MB on a 64 GB card). Bandwidth "MB/s" is read the same way for consistency within
# the exporter; Huawei does not document it and the difference from 1e6 is under 5 %.
_RULES: dict[str, _Rule] = {
    "DCGM_FI_DEV_GPU_UTIL": _Rule("accelerator_utilization_ratio", divisor=100),
    "DCGM_FI_DEV_FB_USED": _Rule("accelerator_hbm_used_bytes", factor=MIB),
    "DCGM_FI_DEV_GPU_TEMP": _Rule("accelerator_temperature_celsius"),
    "DCGM_FI_DEV_POWER_USAGE": _Rule("accelerator_power_watts"),
    "DCGM_FI_DEV_SM_CLOCK": _Rule("accelerator_sm_clock_hertz", factor=1e6),
    "DCGM_FI_DEV_XID_ERRORS": _Rule("accelerator_xid_last"),
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": _Rule(
        "accelerator_energy_joules_total", divisor=1000, counter=True
    ),
    "npu_chip_info_utilization": _Rule("accelerator_utilization_ratio", divisor=100),
    "npu_chip_info_hbm_used_memory": _Rule("accelerator_hbm_used_bytes", factor=MIB),
    "npu_chip_info_hbm_total_memory": _Rule("accelerator_hbm_total_bytes", factor=MIB),
    "npu_chip_info_temperature": _Rule("accelerator_temperature_celsius"),
    "npu_chip_info_power": _Rule("accelerator_power_watts"),
    "npu_chip_info_health_status": _Rule("accelerator_health_status"),
    "npu_chip_info_link_status": _Rule("accelerator_link_up"),
    "npu_chip_info_bandwidth_rx": _Rule("accelerator_network_receive_bytes_per_second", factor=MIB),
    "npu_chip_info_bandwidth_tx": _Rule(
        "accelerator_network_transmit_bytes_per_second", factor=MIB
    ),
    "machine_npu_nums": _Rule("node_accelerators"),
}
# dcgm has no total-memory field: total = FB_USED + FB_FREE of the same GPU and scrape.
# (Newer drivers also report FB_RESERVED; it stays unmapped so the sum matches the spec.)
_FB_USED, _FB_FREE = "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"
_NODE_METRICS = frozenset({"machine_npu_nums"})
_NPU_HEALTH = "npu_chip_info_health_status"  # the one npu metric where -1 is a real value
# Families that describe one chip: a sample of theirs without chip labels cannot be attributed.
_ACCELERATOR_PREFIXES = {"dcgm": ("DCGM_FI_",), "npu": ("npu_chip_",)}

_HOST_LABELS = ("Hostname", "hostname")
_WORKLOAD_LABELS = {  # exporter label -> hint key, first spelling present wins
    "namespace": ("namespace", "pod_namespace"),
    "pod": ("pod", "pod_name"),
    "container": ("container", "container_name"),
}
_DCGM_LABELS = frozenset(
    {"gpu", "UUID", "uuid", "device", "modelName", "pci_bus_id", "DCGM_FI_DRIVER_VERSION"}
)
_NPU_LABELS = frozenset({"id", "vdie_id", "model_name", "name", "pcie_bus_info"})
_WORKLOAD_LABEL_NAMES = frozenset(name for names in _WORKLOAD_LABELS.values() for name in names)
_ENTITY_LABELS = {
    "dcgm": _DCGM_LABELS | _WORKLOAD_LABEL_NAMES | frozenset(_HOST_LABELS),
    "npu": _NPU_LABELS | _WORKLOAD_LABEL_NAMES | frozenset(_HOST_LABELS),
}
_SOURCES = ("auto", "dcgm", "npu")
_UNSAFE = re.compile(r"[^a-z0-9_]")


class PrometheusMappingError(ValueError):
    """Valid text that cannot be attributed, e.g. no host at all; ``line`` is 1-based."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message


@dataclass(frozen=True)
class EntityRef:
    """What a sample is about. Identity is ``(kind, vendor_id)``; the rest describes it.

    ``attributes`` holds ``pci_bus_id``, ``device``, ``driver_version`` and the workload hints
    ``namespace``/``pod``/``container`` when the exporter reports them.
    """

    kind: str
    vendor_id: str
    host: str | None
    index: int | None
    model_name: str | None
    attributes: dict[str, str] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class MappedSample:
    """A sample in catalogue terms. ``timestamp`` is unix seconds.

    Unmapped samples (``mapped=False``) keep the raw value under their sanitised source name,
    with ``unit`` empty. ``extra_labels`` are the labels not used to identify the entity (e.g.
    ``le``, MIG instance, XID ``err_code``); they distinguish series of an unmapped family.
    """

    metric: str
    unit: str
    entity: EntityRef
    timestamp: float
    value: float
    mapped: bool
    source_name: str
    line: int
    extra_labels: dict[str, str] = field(default_factory=dict, hash=False)


@dataclass
class MappingReport:
    """Outcome of one exposition: ``accepted == mapped + unmapped_kept == len(samples)`` and
    ``accepted + sum(dropped.values())`` is the number of parsed samples.

    Drop reasons: ``nan_value``, ``infinite_value``, ``dcgm_blank_sentinel``,
    ``npu_collection_failed`` (-1 from npu-exporter) and ``no_entity`` (a chip metric without
    ``UUID``/``gpu`` or ``id``/``vdie_id``).
    """

    accepted: int = 0
    mapped: int = 0
    unmapped_kept: int = 0
    dropped: dict[str, int] = field(default_factory=dict)  # reason -> count
    samples: list[MappedSample] = field(default_factory=list)

    def as_dict(self, *, include_samples: bool = False) -> dict[str, Any]:
        """JSON-ready summary; samples are left out unless asked for (they can be thousands)."""
        result: dict[str, Any] = {
            "accepted": self.accepted,
            "mapped": self.mapped,
            "unmapped_kept": self.unmapped_kept,
            "dropped": dict(self.dropped),
        }
        if include_samples:
            result["samples"] = [asdict(sample) for sample in self.samples]
        return result


def map_exposition(
    text: str,
    *,
    source: str = "auto",
    default_host: str | None,
    scrape_time: float,
    limits: ParseLimits = NO_LIMITS,
) -> MappingReport:
    """Parse ``text`` and map it onto the catalogue.

    ``source`` is ``"dcgm"``, ``"npu"`` or ``"auto"`` (decided per sample from the metric name,
    so a mixed document is fine). ``default_host`` names the node when no ``Hostname`` label
    does (npu-exporter never sends one). Samples without a timestamp get ``scrape_time``.

    Raises ``PrometheusParseError`` for malformed text and ``PrometheusMappingError`` when a
    sample's host cannot be determined.
    """
    return map_samples(
        iter_text(text, limits),
        source=source,
        default_host=default_host,
        scrape_time=scrape_time,
    )


def map_samples(
    samples: Iterable[ParsedSample],
    *,
    source: str = "auto",
    default_host: str | None,
    scrape_time: float,
    host_labels: tuple[str, ...] = (),
    exporter_only: bool = False,
) -> MappingReport:
    """Map already-parsed samples (text exposition, remote-write, PromQL results).

    ``host_labels`` are further labels to take the host from when neither ``Hostname`` nor
    ``default_host`` names it (remote-write and PromQL results carry Prometheus' ``instance``,
    ``host:port``, whose host part is used); with any, a sample that still names no host is
    dropped as ``no_host`` instead of failing the whole request. ``exporter_only`` drops
    families that are neither dcgm-exporter's nor npu-exporter's (``not_exporter_metric``):
    a Prometheus forwards everything it scrapes, and the portal's catalogue is not a TSDB.
    """
    if source not in _SOURCES:
        raise ValueError(f"source must be one of {', '.join(_SOURCES)}, not {source!r}")
    report = MappingReport()
    results: list[MappedSample | None] = []
    fb_used: dict[tuple, float] = {}
    fb_free: list[tuple[int, tuple, ParsedSample, MappedSample]] = []

    for sample in samples:
        kind = _source_of(sample, source)
        reason = "not_exporter_metric" if exporter_only and kind == "other" else None
        reason = reason or _drop_reason(sample, kind)
        if reason is None:
            host = default_host or _host_from(sample.labels, host_labels)
            if host_labels and not (host or _first(sample.labels, _HOST_LABELS)):
                reason = "no_host"
        if reason is None:
            entity, extra = _entity(sample, kind, host)
            if entity is None:
                reason = "no_entity"
            else:
                extra = {k: v for k, v in extra.items() if k not in host_labels}
        if reason is not None:
            report.dropped[reason] = report.dropped.get(reason, 0) + 1
            continue
        timestamp = sample.timestamp_ms / 1000 if sample.timestamp_ms is not None else scrape_time
        mapped = _map(sample, entity, extra, timestamp)
        if sample.name in (_FB_USED, _FB_FREE):
            key = (entity, timestamp, frozenset(extra.items()))
            if sample.name == _FB_USED:
                fb_used[key] = sample.value
            else:
                fb_free.append((len(results), key, sample, mapped))
                results.append(None)  # decided once every FB_USED has been seen
                continue
        results.append(mapped)

    for position, key, sample, unmapped in fb_free:
        if key in fb_used:
            unmapped = MappedSample(
                metric="accelerator_hbm_total_bytes",
                unit="bytes",
                entity=unmapped.entity,
                timestamp=unmapped.timestamp,
                value=(fb_used[key] + sample.value) * MIB,
                mapped=True,
                source_name=f"{_FB_USED}+{_FB_FREE}",
                line=sample.line,
                extra_labels=unmapped.extra_labels,
            )
        results[position] = unmapped

    report.samples = [mapped for mapped in results if mapped is not None]
    report.accepted = len(report.samples)
    report.mapped = sum(1 for mapped in report.samples if mapped.mapped)
    report.unmapped_kept = report.accepted - report.mapped
    return report


def source_families(metric: str) -> tuple[str, ...]:
    """The exporter metric names that map onto catalogue ``metric`` (what to ask a PromQL
    server for; its answers go back through :func:`map_samples`). Empty for unmapped names."""
    names = [name for name, rule in _RULES.items() if rule.metric == metric]
    if metric == "accelerator_hbm_total_bytes":
        names += [_FB_USED, _FB_FREE]  # dcgm's total is used + free of the same scrape
    return tuple(dict.fromkeys(names))


def _source_of(sample: ParsedSample, source: str) -> str:
    """``dcgm`` or ``npu`` for the vendor's own families, else ``other`` (e.g. ``go_*``)."""
    if source != "auto":
        return source
    if sample.name.startswith("DCGM_"):
        return "dcgm"
    if sample.name.startswith(("npu_", "machine_npu_", "container_npu_")):
        return "npu"
    return "other"


def _drop_reason(sample: ParsedSample, kind: str) -> str | None:
    value = sample.value
    if math.isnan(value):
        return "nan_value"
    if math.isinf(value):
        return "infinite_value"  # no exporter means it, and JSON cannot carry it
    if kind == "dcgm" and value >= DCGM_BLANK_SENTINEL:
        return "dcgm_blank_sentinel"
    if kind == "npu" and value == -1 and sample.name != _NPU_HEALTH:
        return "npu_collection_failed"
    return None


def _entity(
    sample: ParsedSample, kind: str, default_host: str | None
) -> tuple[EntityRef | None, dict[str, str]]:
    """The entity and the labels left over; ``(None, {})`` if a chip sample names no chip."""
    labels = sample.labels
    host = _first(labels, _HOST_LABELS) or default_host
    if not host:
        raise PrometheusMappingError(
            sample.line, f"{sample.name}: no Hostname label and no node= given"
        )
    if kind == "dcgm":
        vendor_id = _first(labels, ("UUID", "uuid"))
        index, prefix, model = labels.get("gpu"), "gpu", labels.get("modelName")
        pci = labels.get("pci_bus_id")
    elif kind == "npu":
        vendor_id = labels.get("vdie_id")
        index, prefix, model = labels.get("id"), "npu", _first(labels, ("model_name", "name"))
        pci = labels.get("pcie_bus_info")
    else:  # other families only ever describe the node
        vendor_id = index = model = pci = None
        prefix = ""

    if sample.name in _NODE_METRICS or not (vendor_id or index):
        if sample.name.startswith(_ACCELERATOR_PREFIXES.get(kind, ())):
            return None, {}
        extra = {k: v for k, v in labels.items() if k not in _HOST_LABELS}
        return EntityRef("node", host, host, None, None, {}), extra

    attributes = {"pci_bus_id": pci, "device": labels.get("device")}
    attributes["driver_version"] = labels.get("DCGM_FI_DRIVER_VERSION")
    for hint, spellings in _WORKLOAD_LABELS.items():
        attributes[hint] = _first(labels, spellings)
    entity = EntityRef(
        kind="accelerator",
        vendor_id=vendor_id or f"{host}/{prefix}{index}",
        host=host,
        index=int(index) if index and index.isdigit() else None,
        model_name=model or None,
        attributes={k: v for k, v in attributes.items() if v},
    )
    extra = {k: v for k, v in labels.items() if k not in _ENTITY_LABELS[kind]}
    return entity, extra


def _map(
    sample: ParsedSample, entity: EntityRef, extra: dict[str, str], timestamp: float
) -> MappedSample:
    rule = _RULES.get(sample.name)
    if rule is None and sample.name.endswith("_total"):
        rule = _RULES.get(sample.name.removesuffix("_total"))
        rule = rule if rule is not None and rule.counter else None
    if rule is None:
        metric, unit, value = _unmapped_name(sample), "", sample.value
    else:
        metric, unit = rule.metric, MAPPED_METRICS[rule.metric][0]
        value = sample.value * rule.factor / rule.divisor
        if rule.metric == "accelerator_link_up":
            value = 1.0 if sample.value == 1 else 0.0  # npu-exporter prints UP as 1
    return MappedSample(
        metric=metric,
        unit=unit,
        entity=entity,
        timestamp=timestamp,
        value=value,
        mapped=rule is not None,
        source_name=sample.name,
        line=sample.line,
        extra_labels=extra,
    )


def _unmapped_name(sample: ParsedSample) -> str:
    """Lower-case snake name; counters always end in ``_total`` so that raw exporter text and
    text re-exposed by a client library (which appends ``_total``) land on one metric."""
    name = _UNSAFE.sub("_", sample.name.lower())
    is_counter_value = sample.family_type == "counter" and not name.endswith("_created")
    return name if not is_counter_value or name.endswith("_total") else f"{name}_total"


def _host_from(labels: dict[str, str], names: tuple[str, ...]) -> str | None:
    """The host part of the first of ``names`` present (``instance`` is ``host:port``)."""
    value = _first(labels, names)
    if not value:
        return None
    if value.startswith("["):  # [ipv6]:port
        return value[1:].split("]", 1)[0] or None
    host, _, port = value.rpartition(":")
    return host if host and port.isdigit() else value


def _first(labels: dict[str, str], names: tuple[str, ...]) -> str | None:
    for name in names:
        if labels.get(name):
            return labels[name]
    return None
