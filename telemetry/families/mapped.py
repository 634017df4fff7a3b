"""What the exporter mapping produces (:mod:`telemetry.families.mapping`): the entity a sample
is about, the sample in catalogue terms, and the report of one exposition with every drop
counted. Pure Python, like the mapping itself.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


class PrometheusMappingError(ValueError):
    """Valid text that cannot be attributed, e.g. no host at all; ``line`` is 1-based."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message


@dataclass(frozen=True)
class EntityRef:
    """What a sample is about. Identity is ``(kind, vendor_id)`` — the chip id for a card
    (docs/architecture.md §5), the hostname for a node; the rest describes it and takes no
    part in equality, so one chip seen under two hosts is still one entity.

    ``parent_vendor_id`` is the GPU's id when the entity is a MIG slice of it.
    ``attributes`` holds ``pci_bus_id``, ``device``, ``driver_version`` and, for a MIG slice,
    ``mig_profile``/``gpu_instance_id``/``compute_instance_id`` when the exporter reports them.
    ``host_derived``: the id is the host plus the exporter's index (no vdie_id or UUID).
    """

    kind: str
    vendor_id: str
    host: str | None = field(compare=False)
    index: int | None = field(compare=False)
    model_name: str | None = field(compare=False)
    attributes: dict[str, str] = field(default_factory=dict, compare=False)
    parent_vendor_id: str | None = field(default=None, compare=False)
    host_derived: bool = field(default=False, compare=False)


# Built per sample: not frozen for speed (see ``ParsedSample``), never mutated.
@dataclass(slots=True, unsafe_hash=True)
class MappedSample:
    """A sample in catalogue terms. ``timestamp`` is unix seconds.

    Unmapped samples (``mapped=False``) keep the raw value under their sanitised source name,
    with ``unit`` empty. ``extra_labels`` are the labels not used to identify the entity (e.g.
    ``le``, XID ``err_code``); they distinguish series of an unmapped family. ``attribution``
    holds ``namespace``/``pod``/``container``/``hpc_job`` when the exporter reports them (who
    used the chip at that time; attribution intervals are built from them).
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
    attribution: dict[str, str] = field(default_factory=dict, hash=False)


@dataclass
class MappingReport:
    """Outcome of one exposition: ``accepted == mapped + unmapped_kept == len(samples)`` and
    ``accepted - derived + sum(dropped.values())`` is the number of parsed samples (``derived``:
    samples the mapping made, NVIDIA health from XID and DCGM health fields).

    Drop reasons: ``nan_value``, ``infinite_value``, ``dcgm_blank_sentinel``,
    ``npu_collection_failed`` (-1 from npu-exporter) — readings that mean "no value" — and the
    refusals of :class:`telemetry.families.identity.Refusal`: ``no_host``, ``no_entity`` (a chip
    metric without ``UUID``/``gpu`` or ``id``/``vdie_id``) and ``ambiguous_chip`` (one
    index-plus-host chip reported by two Prometheus targets: two physical chips that cannot be
    told apart, so neither is stored rather than interleaved).
    """

    accepted: int = 0
    mapped: int = 0
    unmapped_kept: int = 0
    derived: int = 0
    dropped: dict[str, int] = field(default_factory=dict)  # reason -> count
    samples: list[MappedSample] = field(default_factory=list)

    def as_dict(self, *, include_samples: bool = False) -> dict[str, Any]:
        """JSON-ready summary; samples are left out unless asked for (they can be thousands)."""
        result: dict[str, Any] = {
            "accepted": self.accepted,
            "mapped": self.mapped,
            "unmapped_kept": self.unmapped_kept,
            "derived": self.derived,
            "dropped": dict(self.dropped),
        }
        if include_samples:
            result["samples"] = [asdict(sample) for sample in self.samples]
        return result
