"""Map dcgm-exporter and Ascend npu-exporter samples onto the metric catalogue.

Formats and identity rules: docs/architecture.md §5 (serving engines: §5b).

Pure Python: the ingestion service turns the report into rows. Every parsed sample ends up
either in ``MappingReport.samples`` (mapped into the catalogue, or kept unmapped under its own
sanitised name) or counted under a drop reason; nothing disappears silently.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from telemetry.families import nvidia, serving
from telemetry.families.identity import (
    DEFAULT_HOST_LABELS,
    Refusal,
    chip_id,
    host_of,
)
from telemetry.families.mapped import (
    EntityRef,
    MappedSample,
    MappingReport,
    PrometheusMappingError,
)
from telemetry.families.mapping_pass import FB_FREE, FB_USED, UNSAFE, ExpositionPass
from telemetry.families.mapping_rules import MAPPED_METRICS
from telemetry.families.mapping_rules import RULES as _RULES
from telemetry.families.mapping_rules import Rule as _Rule
from telemetry.families.parse import NO_LIMITS, ParsedSample, ParseLimits, iter_text
from telemetry.families.series_cache import SERIES

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

# DCGM's "blank" values (DCGM_INT64_BLANK = 0x7ffffffffffffff0 and the NOT_FOUND/NOT_SUPPORTED
# codes above it) mean "no value". As floats they all round to 2**63, so one comparison
# catches every code without inspecting the digits.
DCGM_BLANK_SENTINEL = 9223372036854775792


# dcgm has no total-memory field: total = FB_USED + FB_FREE of the same GPU and scrape.
# (Newer drivers also report FB_RESERVED; it stays unmapped so the sum matches the spec.)
_FB_USED, _FB_FREE = FB_USED, FB_FREE
_NODE_METRICS = frozenset({"machine_npu_nums"})
_NPU_HEALTH = "npu_chip_info_health_status"  # the one npu metric where -1 is a real value
# Families that describe one chip: a sample of theirs without chip labels cannot be attributed.
_ACCELERATOR_PREFIXES = {"dcgm": ("DCGM_FI_",), "npu": ("npu_chip_",)}

# Attribution labels (Kubernetes pod mapping, dcgm-exporter's Slurm job mapping): kept on the
# sample for attribution, never part of a chip's identity. First spelling present wins.
_ATTRIBUTION_LABELS = {
    "namespace": ("namespace", "pod_namespace"),
    "pod": ("pod", "pod_name"),
    "container": ("container", "container_name"),
    "hpc_job": ("hpc_job",),  # dcgm-exporter's Slurm job mapping (--hpc-job-mapping-dir)
}
_MIG_LABELS = frozenset({"GPU_I_PROFILE", "GPU_I_ID", "GPU_CI_ID"})
_DCGM_LABELS = (
    frozenset(
        {"gpu", "UUID", "uuid", "device", "modelName", "pci_bus_id", "DCGM_FI_DRIVER_VERSION"}
    )
    | _MIG_LABELS
)
_NPU_LABELS = frozenset({"id", "vdie_id", "model_name", "name", "pcie_bus_info"})
_ATTRIBUTION_LABEL_NAMES = frozenset(n for names in _ATTRIBUTION_LABELS.values() for n in names)
_ENTITY_LABELS = {
    "dcgm": _DCGM_LABELS | _ATTRIBUTION_LABEL_NAMES,
    "npu": _NPU_LABELS | _ATTRIBUTION_LABEL_NAMES,
}
_SOURCES = ("auto", "dcgm", "npu")
_UNSAFE = UNSAFE


def map_exposition(
    text: str,
    *,
    source: str = "auto",
    default_host: str | None,
    scrape_time: float,
    limits: ParseLimits = NO_LIMITS,
    host_chain: tuple[str, ...] = DEFAULT_HOST_LABELS,
    target_labels: dict[str, str] | None = None,
) -> MappingReport:
    """Parse ``text`` and map it onto the catalogue.

    ``source`` is ``"dcgm"``, ``"npu"`` or ``"auto"`` (decided per sample from the metric name,
    so a mixed document is fine). ``default_host`` names the node when no label of
    ``host_chain`` does (npu-exporter never sends one). Samples without a timestamp get
    ``scrape_time``.

    ``target_labels`` are the scrape target's own labels (the portal's scraper: ``instance``,
    the target URL's ``host:port``), added to every sample that lacks them — as Prometheus
    attaches a target's labels, with the exposition's own winning (``honor_labels: true``).

    Raises ``PrometheusParseError`` for malformed text and ``PrometheusMappingError`` when a
    sample's host cannot be determined (a pushed text is refused whole, naming the line).
    """
    samples = iter_text(text, limits)
    if target_labels:
        samples = _with_target_labels(samples, target_labels)
    return map_samples(
        samples,
        source=source,
        default_host=default_host,
        scrape_time=scrape_time,
        host_chain=host_chain,
        strict_host=True,
    )


def _with_target_labels(
    samples: Iterable[ParsedSample], target_labels: dict[str, str]
) -> Iterable[ParsedSample]:
    for sample in samples:
        missing = {k: v for k, v in target_labels.items() if not sample.labels.get(k)}
        if missing:
            # A new sample, not a changed one: parsed samples are hashed by value.
            sample = ParsedSample(
                name=sample.name,
                labels={**sample.labels, **missing},
                value=sample.value,
                timestamp_ms=sample.timestamp_ms,
                line=sample.line,
                family_type=sample.family_type,
            )
        yield sample


def map_samples(
    samples: Iterable[ParsedSample],
    *,
    source: str = "auto",
    default_host: str | None,
    scrape_time: float,
    host_chain: tuple[str, ...] = DEFAULT_HOST_LABELS,
    strict_host: bool = False,
    exporter_only: bool = False,
) -> MappingReport:
    """Map already-parsed samples (text exposition, remote-write, PromQL results).

    The host is the first label of ``host_chain`` present (``instance``: its host part), with
    ``default_host`` before the address label. A sample that still names no host raises
    ``PrometheusMappingError`` when ``strict_host``, else it is refused as ``no_host``.
    ``exporter_only`` drops families that are neither dcgm-exporter's nor npu-exporter's
    (``not_exporter_metric``): a Prometheus forwards everything it scrapes, and the portal's
    catalogue is not a TSDB.
    """
    if source not in _SOURCES:
        raise ValueError(f"source must be one of {', '.join(_SOURCES)}, not {source!r}")
    report = MappingReport()
    results: list[MappedSample | None] = []
    pending = ExpositionPass()
    chain_labels = frozenset(host_chain)
    context = (source, default_host, host_chain, exporter_only)

    served = serving.ServingBatch()
    for sample in samples:
        if source == "auto" and _serving_add(
            served, sample, host_chain, default_host, scrape_time, report
        ):
            continue
        kind = _source_of(sample, source)
        reason = "not_exporter_metric" if exporter_only and kind == "other" else None
        reason = reason or _drop_reason(sample, kind)
        if reason is None:
            # What the labels map to is a pure function of them and of this call's host
            # rules: memoised per process across requests (telemetry.families.series_cache).
            key = (kind, _name_class(sample.name, kind), context, tuple(sample.labels.items()))
            found = SERIES.get(key)
            if found is None:
                found = _series_map(sample, kind, host_chain, default_host, chain_labels)
                SERIES.put(key, found)
            reason, entity, extra, attribution = found
            if reason is Refusal.NO_HOST and strict_host:
                raise PrometheusMappingError(
                    sample.line,
                    f"{sample.name}: no host label ({', '.join(host_chain)}) and no node=",
                )
        if reason is not None:
            report.dropped[str(reason)] = report.dropped.get(str(reason), 0) + 1
            continue
        timestamp = sample.timestamp_ms / 1000 if sample.timestamp_ms is not None else scrape_time
        mapped = _map(sample, entity, extra, timestamp, attribution)
        results.append(pending.add(len(results), sample, mapped))

    ambiguous = pending.ambiguous()
    report.samples = []
    _serving_rows(served, results)
    for mapped in pending.resolve(results):
        if mapped is None:
            continue
        if mapped.entity.kind == "accelerator" and mapped.entity.vendor_id in ambiguous:
            if mapped.source_name != nvidia.HEALTH_SOURCE:  # derived, not received
                reason = Refusal.AMBIGUOUS_CHIP.value
                report.dropped[reason] = report.dropped.get(reason, 0) + 1
            continue
        report.samples.append(mapped)
    report.accepted = len(report.samples)
    report.mapped = sum(1 for mapped in report.samples if mapped.mapped)
    report.unmapped_kept = report.accepted - report.mapped
    report.derived = sum(1 for s in report.samples if s.source_name == nvidia.HEALTH_SOURCE)
    return report


def _serving_add(
    served: serving.ServingBatch,
    sample: ParsedSample,
    host_chain: tuple[str, ...],
    default_host: str | None,
    scrape_time: float,
    report: MappingReport,
) -> bool:
    """Take a serving-engine sample (``telemetry.families.serving``); False if it is not one."""
    name = serving.serving_name(sample.name, sample.labels)
    if name is None:
        return False
    reason = "nan_value" if math.isnan(sample.value) else None
    if reason is None and math.isinf(sample.value):
        reason = "infinite_value"
    host = host_of(sample.labels, host_chain, default_host)
    key = serving.endpoint_key(sample.labels, host)
    if reason is None and key is None:
        reason = str(Refusal.NO_ENTITY)
    if reason is not None:
        report.dropped[reason] = report.dropped.get(reason, 0) + 1
        return True
    timestamp = sample.timestamp_ms / 1000 if sample.timestamp_ms is not None else scrape_time
    served.add(name, key, host, sample.name, sample.labels, timestamp, sample.value, sample.line)
    return True


def _serving_rows(served: serving.ServingBatch, results: list[MappedSample | None]) -> None:
    for metric, key, host, model, ts, value, line, name, labels in served.rows():
        attributes = {
            k: labels[k] for k in ("instance", "job", *serving.POD_LABELS) if labels.get(k)
        }
        entity = EntityRef(serving.SERVING_KIND, key, host, None, model, attributes)
        results.append(
            MappedSample(
                metric=metric,
                unit=serving.unit_of(metric),
                entity=entity,
                timestamp=ts,
                value=value,
                mapped=True,
                source_name=name,
                line=line,
                attribution=_attribution(labels),
            )
        )


def source_families(metric: str) -> tuple[str, ...]:
    """The exporter metric names that map onto catalogue ``metric`` (what to ask a PromQL
    server for; its answers go back through :func:`map_samples`). Empty for unmapped names."""
    if serving.is_serving_metric(metric):
        return serving.source_families(metric)
    names = [name for name, rule in _RULES.items() if rule.metric == metric]
    if metric == "accelerator_hbm_total_bytes":
        names += [_FB_USED, _FB_FREE]  # dcgm's total is used + free of the same scrape
    if metric == "accelerator_health_status":
        # dcgm's health point is derived from its XID/ECC/row-remap fields (mapping_pass):
        # a PromQL server is asked for those, and the same pass derives the same point.
        names += sorted(nvidia.HEALTH_INPUTS)
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


def _name_class(name: str, kind: str) -> str:
    """The part of a metric name that :func:`_entity` depends on."""
    if name in _NODE_METRICS:
        return "node"
    return "chip" if name.startswith(_ACCELERATOR_PREFIXES.get(kind, ())) else "other"


def _series_map(
    sample: ParsedSample,
    kind: str,
    host_chain: tuple[str, ...],
    default_host: str | None,
    chain_labels: frozenset[str],
) -> tuple[Refusal | None, EntityRef | None, dict[str, str], dict[str, str]]:
    """``(refusal, entity, labels left over, attribution)`` of a series' label set."""
    host = host_of(sample.labels, host_chain, default_host)
    if not host:
        return Refusal.NO_HOST, None, {}, {}
    entity, extra = _entity(sample, kind, host, chain_labels)
    if entity is None:
        return Refusal.NO_ENTITY, None, {}, {}
    return None, entity, extra, _attribution(sample.labels)


def _entity(
    sample: ParsedSample, kind: str, host: str, chain_labels: frozenset[str]
) -> tuple[EntityRef | None, dict[str, str]]:
    """The entity and the labels left over; ``(None, {})`` if a chip sample names no chip."""
    labels = sample.labels
    vendor_id, parent, host_derived = chip_id(kind, labels, host)
    if sample.name in _NODE_METRICS or vendor_id is None:
        if sample.name.startswith(_ACCELERATOR_PREFIXES.get(kind, ())):
            return None, {}
        extra = {k: v for k, v in labels.items() if k not in chain_labels}
        return EntityRef("node", host, host, None, None, {}), extra

    if kind == "dcgm":
        index, model, pci = labels.get("gpu"), labels.get("modelName"), labels.get("pci_bus_id")
    else:
        index, model = labels.get("id"), _first(labels, ("model_name", "name"))
        pci = labels.get("pcie_bus_info")
    attributes = {
        "pci_bus_id": pci,
        "device": labels.get("device"),
        "driver_version": labels.get("DCGM_FI_DRIVER_VERSION"),
        "mig_profile": labels.get("GPU_I_PROFILE"),
        "gpu_instance_id": labels.get("GPU_I_ID"),
        "compute_instance_id": labels.get("GPU_CI_ID"),
    }
    entity = EntityRef(
        kind="accelerator",
        vendor_id=vendor_id,
        host=host,
        index=int(index) if index and index.isdigit() else None,
        model_name=model or None,
        attributes={k: v for k, v in attributes.items() if v},
        parent_vendor_id=parent,
        host_derived=host_derived,
    )
    extra = {
        k: v for k, v in labels.items() if k not in _ENTITY_LABELS[kind] and k not in chain_labels
    }
    return entity, extra


_ANY_ATTRIBUTION = frozenset(name for names in _ATTRIBUTION_LABELS.values() for name in names)


def _attribution(labels: dict[str, str]) -> dict[str, str]:
    if _ANY_ATTRIBUTION.isdisjoint(labels):
        return {}  # a free card's series (most of a fleet's): no label to look up one by one
    found = {hint: _first(labels, names) for hint, names in _ATTRIBUTION_LABELS.items()}
    return {hint: value for hint, value in found.items() if value}


# (name, family type) -> (metric, unit, rule or None): a handful of names, bounded anyway.
_NAMES: dict[tuple[str, str | None], tuple[str, str, _Rule | None]] = {}


def _name_map(sample: ParsedSample) -> tuple[str, str, _Rule | None]:
    key = (sample.name, sample.family_type)
    found = _NAMES.get(key)
    if found is not None:
        return found
    rule = _RULES.get(sample.name)
    if rule is None and sample.name.endswith("_total"):
        rule = _RULES.get(sample.name.removesuffix("_total"))
        rule = rule if rule is not None and rule.counter else None
    if rule is None:
        found = (_unmapped_name(sample), "", None)
    else:
        found = (rule.metric, MAPPED_METRICS[rule.metric][0], rule)
    if len(_NAMES) > 10_000:
        _NAMES.clear()
    _NAMES[key] = found
    return found


def _map(
    sample: ParsedSample,
    entity: EntityRef,
    extra: dict[str, str],
    timestamp: float,
    attribution: dict[str, str],
) -> MappedSample:
    metric, unit, rule = _name_map(sample)
    if rule is None:
        value = sample.value
    else:
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
        attribution=attribution,
    )


def _unmapped_name(sample: ParsedSample) -> str:
    """Lower-case snake name; counters always end in ``_total`` so that raw exporter text and
    text re-exposed by a client library (which appends ``_total``) land on one metric."""
    name = _UNSAFE.sub("_", sample.name.lower())
    is_counter_value = sample.family_type == "counter" and not name.endswith("_created")
    return name if not is_counter_value or name.endswith("_total") else f"{name}_total"


def _first(labels: dict[str, str], names: tuple[str, ...]) -> str | None:
    for name in names:
        if labels.get(name):
            return labels[name]
    return None
