"""The decisions a mapping takes over a whole exposition, not per sample: dcgm's total memory
(``FB_USED + FB_FREE`` of one scrape), the utilisation field that wins (PROF over DEV), NVIDIA
health from XID and DCGM health fields (:mod:`telemetry.families.nvidia`), and index-plus-host
chips that two Prometheus targets report (refused as ``ambiguous_chip``). Pure Python, used
by :func:`telemetry.families.mapping.map_samples`; docs/architecture.md §5.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from telemetry.families import nvidia
from telemetry.families.identity import TARGET_LABELS
from telemetry.families.parse import ParsedSample

# ``telemetry.families.mapping.MappedSample`` (not imported: mapping imports this module).
MappedSample = Any

MIB = 2**20
# dcgm has no total-memory field: total = FB_USED + FB_FREE of the same GPU and scrape.
FB_USED, FB_FREE = "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"
UNSAFE = re.compile(r"[^a-z0-9_]")


class ExpositionPass:
    """Decisions that need the whole exposition: dcgm's total memory (FB_USED + FB_FREE of
    one scrape), the utilisation field that wins (PROF over DEV), NVIDIA health from XID and
    DCGM health fields, and index-plus-host chips reported by two Prometheus targets."""

    def __init__(self) -> None:
        self.fb_used: dict[tuple, float] = {}
        self.fb_free: list[tuple[int, tuple, ParsedSample]] = []
        self.prof: set[tuple] = set()
        self.dev_util: list[tuple[int, tuple, float]] = []
        self.health: dict[tuple, tuple[bool, MappedSample]] = {}
        self.targets: dict[str, set[tuple]] = {}

    def add(self, position: int, sample: ParsedSample, mapped: MappedSample) -> MappedSample:
        entity = mapped.entity
        key = (entity, mapped.timestamp, frozenset(mapped.extra_labels.items()))
        point = (entity, mapped.timestamp)
        if entity.kind == "accelerator" and entity.host_derived:
            target = tuple(sample.labels.get(name) for name in TARGET_LABELS)
            self.targets.setdefault(entity.vendor_id, set()).add(target)
        if sample.name == FB_USED:
            self.fb_used[key] = sample.value
        elif sample.name == FB_FREE:
            self.fb_free.append((position, key, sample))
        elif sample.name == nvidia.PROF_UTIL:
            self.prof.add(point)
        elif sample.name == nvidia.DEV_UTIL:
            self.dev_util.append((position, point, sample.value))
        if sample.name in nvidia.HEALTH_INPUTS and entity.kind == "accelerator":
            failing = nvidia.health_failing(sample.name, sample.value, sample.labels)
            before = self.health.get(point)
            self.health[point] = ((before[0] if before else False) or failing, mapped)
        return mapped

    def resolve(self, results: list[MappedSample | None]) -> list[MappedSample | None]:
        for position, key, sample in self.fb_free:
            free = results[position]
            if key in self.fb_used:
                results[position] = replace(
                    free,
                    metric="accelerator_hbm_total_bytes",
                    unit="bytes",
                    value=(self.fb_used[key] + sample.value) * MIB,
                    mapped=True,
                    source_name=f"{FB_USED}+{FB_FREE}",
                )
        for position, point, raw in self.dev_util:
            if point in self.prof:  # kept under its own name: the PROF field is the figure
                dev = results[position]
                name = UNSAFE.sub("_", dev.source_name.lower())
                results[position] = replace(dev, metric=name, unit="", value=raw, mapped=False)
        for failing, first in self.health.values():
            results.append(
                replace(
                    first,
                    metric="accelerator_health_status",
                    unit="status",
                    value=0.0 if failing else 1.0,
                    mapped=True,
                    source_name=nvidia.HEALTH_SOURCE,
                    extra_labels={},
                )
            )
        return results

    def ambiguous(self) -> set[str]:
        """Index-plus-host chips that two Prometheus targets report."""
        return {chip for chip, targets in self.targets.items() if len(targets) > 1}
