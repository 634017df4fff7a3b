"""Memory-pool page data: per supernode pool (HBM tier and host-DRAM tier)."""

from __future__ import annotations

from dataclasses import dataclass, field

from cluster_portal.web.sorting import natural_key
from cluster_portal.web.timerange import TimeRange
from dashboards.selectors.common import finite, latest_snapshot, metric_defs
from inventory.models import Cluster
from telemetry.models import Entity, MetricDefinition
from telemetry.read import (
    Points,
    cluster_curves,
    cluster_entity,
    kind_series_many,
    series_points_many,
)

POOL_METRICS = (
    "memory_pool_hbm_total_bytes",
    "memory_pool_hbm_reserved_bytes",
    "memory_pool_hbm_live_bytes",
    "memory_pool_hbm_free_bytes",
    "memory_pool_kv_live_bytes",
    "memory_pool_kv_allocated_bytes",
    "memory_pool_prefix_cache_bytes",
    "memory_pool_dram_total_bytes",
    "memory_pool_dram_used_bytes",
    "memory_pool_internal_fragmentation_ratio",
    "memory_pool_external_fragmentation_ratio",
    "memory_pool_kv_hit_ratio",
    "memory_pool_kv_evictions_per_second",
    "memory_pool_allocation_failures_per_second",
)
# A baseline hit ratio under plain LRU, if a source reports one next to the LRU-K figure.
LRU_BASELINE_METRIC = "memory_pool_kv_hit_ratio_lru"
CLUSTER_SERIES = ("cluster_hbm_live_ratio", "cluster_hbm_reserved_ratio", "cluster_kv_hit_ratio")


@dataclass
class MemoryData:
    cluster: Cluster
    pools: list[tuple[str, dict[str, float | None]]] = field(default_factory=list)
    series: dict[str, Points] = field(default_factory=dict)
    lru_baseline_reported: bool = False
    offload_per_simulated_second: bool = False
    sources: dict[str, str] = field(default_factory=dict)  # curve name → where it came from


SIM_SECONDS = "twin_simulated_seconds_total"
# The twin's prefix caches (and so its offload) advance in 5-simulated-minute batches: a rate
# over a shorter span is all-or-nothing, so simulated-time rates span at least this much.
MIN_SIM_SPAN = 300.0


def offload_rate(points: Points, sim_seconds: Points | None = None) -> Points:
    """Bytes/s from a cumulative counter's points (a reset, e.g. a twin reset, is skipped).

    With the twin's simulated clock (``sim_seconds``, same timestamps) the rate is per
    *simulated* second: the twin runs faster than real time, so bytes per wall second would
    overstate the traffic by the speed-up (the "1B MiB/s" operators saw). Without it (real
    exporters) it is per wall second.
    """
    clock = dict(sim_seconds or [])
    out: Points = []
    if clock:
        anchor = None
        for ts, value in points:
            now = clock.get(ts)
            if now is None:
                continue
            if anchor is None or value < anchor[1] or now < anchor[2]:
                anchor = (ts, value, now)  # first point, or the twin was reset
                continue
            span = now - anchor[2]
            if span >= MIN_SIM_SPAN:
                out.append((ts, (value - anchor[1]) / span))
                anchor = (ts, value, now)
        return out
    for (t0, v0), (t1, v1) in zip(points, points[1:], strict=False):
        seconds = (t1 - t0).total_seconds()
        if seconds > 0 and v1 >= v0:
            out.append((t1, (v1 - v0) / seconds))
    return out


def memory(cluster: Cluster, tr: TimeRange) -> MemoryData:
    """Newest pool figures per supernode plus the range's cluster-wide memory series.

    Queries: the pool snapshot (shared for a few seconds), one for pool keys, a grouped read
    of the cluster series, one grouped read of the pool-wide failure and eviction curves.
    """
    data = MemoryData(cluster=cluster)
    names = POOL_METRICS + (LRU_BASELINE_METRIC,)
    snap = latest_snapshot(cluster.pk, "memory_pool", names).by_entity()
    keys = dict(
        Entity.objects.filter(pk__in=list(snap), kind="memory_pool").values_list("pk", "key")
    )
    for entity_id in sorted(snap, key=lambda e: natural_key(keys.get(e, ""))):
        values = snap[entity_id]
        data.pools.append(
            (keys.get(entity_id, str(entity_id)), {n: finite(values.get(n)) for n in names})
        )
    data.lru_baseline_reported = MetricDefinition.objects.filter(name=LRU_BASELINE_METRIC).exists()
    entity = cluster_entity(cluster)
    metrics = metric_defs(CLUSTER_SERIES + ("cluster_kv_offload_bytes_total", SIM_SECONDS))
    curves = series_points_many(
        [
            metrics.get(name)
            for name in (*CLUSTER_SERIES, "cluster_kv_offload_bytes_total", SIM_SECONDS)
        ],
        entity,
        tr,
    )
    # HBM in use is derived from the cards where the cluster has no scalar (exporters).
    derived, data.sources = cluster_curves(cluster, list(CLUSTER_SERIES), tr.start, tr.end, curves)
    data.series.update(derived)
    data.offload_per_simulated_second = bool(curves.get(SIM_SECONDS))
    data.series["offload_bytes_per_second"] = offload_rate(
        curves.get("cluster_kv_offload_bytes_total", []), curves.get(SIM_SECONDS)
    )
    # Both pool-wide curves in one grouped read.
    data.series.update(
        kind_series_many(
            cluster_id=cluster.pk,
            kind="memory_pool",
            metrics={
                "memory_pool_allocation_failures_per_second": "sum",
                "memory_pool_kv_evictions_per_second": "sum",
            },
            tr=tr,
        )
    )
    return data
