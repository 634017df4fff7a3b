"""Scheduling mechanisms as independent, named scenario features with physical parameters.

``split`` and ``unified`` differ only in their placement rule (partitioned vs one shared pool,
:mod:`..sched.policy`) and in which features they enable by default
(:data:`..sched.policy.FEATURE_PRESETS`); any feature can be switched on or off for either
placement (``Policy.features``), which is what the ablation does.

* ``time_sharing``: during ``Policy.night_window`` non-core services run at
  ``Policy.night_target_utilization`` (fewer replicas) and, under a partitioned placement, idle
  cards of the inference partition are lent to training; at the end of the window lent cards
  are drained (checkpoint, then stop: no work lost, ``Faults.restart_overhead_s`` to restart).
* ``preemption``: inference may reclaim training cards at any time; a preempted gang loses the
  work since its last checkpoint and pays the restart time (partitioned: only lent cards).
* ``elastic``: elastic jobs grow into free cards and shrink instead of being preempted,
  paying ``Policy.resize_overhead_s`` per resize.
* ``pooled_memory``: the supernode memory pool - KV blocks are reserved as allocated (up to
  ``pool_hbm_ceiling`` of HBM per card, free HBM pooled in 1 GiB slices) and evicted prefix
  blocks spill to a host DRAM/CXL tier (``Policy.kv_offload``); without it each serving card
  reserves ``Policy.reserve_fraction_split`` of its HBM up front (vLLM style).
* ``weight_cache``: one copy of each model's weights per supernode in pooled DRAM; a new
  replica loads at ``weight_cache_bandwidth_bytes_per_s`` instead of from storage at
  ``storage_bandwidth_bytes_per_s``.
* ``prefix_reuse``: the prefix KV cache (shared prompt prefixes skip prefill).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

FEATURE_NAMES = (
    "time_sharing",
    "preemption",
    "elastic",
    "pooled_memory",
    "weight_cache",
    "prefix_reuse",
)


@dataclass
class Features:
    """Which mechanisms are on, and their physical parameters (see module doc)."""

    time_sharing: bool = False
    preemption: bool = False
    elastic: bool = False
    pooled_memory: bool = False
    weight_cache: bool = False
    prefix_reuse: bool = True
    pool_hbm_ceiling: float = 0.95
    weight_cache_bandwidth_bytes_per_s: float = 50e9
    storage_bandwidth_bytes_per_s: float = 2e9

    def __post_init__(self) -> None:
        for n in FEATURE_NAMES:
            v = getattr(self, n)
            if not isinstance(v, bool):
                raise ValueError(f"Features: field {n!r} must be true or false (got {v!r})")
        if not (
            isinstance(self.pool_hbm_ceiling, (int, float)) and 0.5 <= self.pool_hbm_ceiling <= 1
        ):
            raise ValueError(
                "Features: field 'pool_hbm_ceiling' must be in [0.5, 1] "
                f"(got {self.pool_hbm_ceiling!r})"
            )
        for n in ("weight_cache_bandwidth_bytes_per_s", "storage_bandwidth_bytes_per_s"):
            v = getattr(self, n)
            if not (isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0):
                raise ValueError(f"Features: field {n!r} must be a number > 0 (got {v!r})")

    @classmethod
    def coerce(cls, value: Any) -> Features | None:
        """``None``, a :class:`Features` or a dict (from JSON; unknown keys rejected)."""
        if value is None or isinstance(value, Features):
            return value
        if not isinstance(value, dict):
            raise ValueError(f"Policy: field 'features' must be an object (got {value!r})")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(value) - known)
        if unknown:
            raise ValueError(f"Features: unknown field(s) {unknown}")
        return cls(**value)
