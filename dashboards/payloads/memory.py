"""Memory-pool payload: per-supernode tiers and the pool's behaviour over time."""

from __future__ import annotations

from django.utils.translation import gettext as _

from dashboards import charts
from dashboards.payloads.common import series_table, table
from dashboards.selectors.memory import POOL_METRICS, MemoryData

GIB = 2**30


def memory_payload(data: MemoryData) -> dict:
    pools = [key for key, _values in data.pools]

    def column(name: str, factor: float = 1.0) -> list:
        return [None if v.get(name) is None else v[name] * factor for _k, v in data.pools]

    s = data.series
    figures = {
        "hbm": charts.bars(
            pools,
            {
                _("live"): column("memory_pool_hbm_live_bytes", 1 / GIB),
                _("reserved"): column("memory_pool_hbm_reserved_bytes", 1 / GIB),
                _("capacity"): column("memory_pool_hbm_total_bytes", 1 / GIB),
            },
            title=_("HBM tier per supernode: live vs reserved (GiB)"),
            y_title="GiB",
        ),
        "dram": charts.bars(
            pools,
            {
                _("used"): column("memory_pool_dram_used_bytes", 1 / GIB),
                _("capacity"): column("memory_pool_dram_total_bytes", 1 / GIB),
            },
            title=_("Host-DRAM tier per supernode (GiB)"),
            y_title="GiB",
        ),
        "fragmentation": charts.bars(
            pools,
            {
                _("internal (inside KV blocks)"): column(
                    "memory_pool_internal_fragmentation_ratio"
                ),
                _("external (stranded free HBM)"): column(
                    "memory_pool_external_fragmentation_ratio"
                ),
                _("KV prefix-cache hit ratio (LRU-K)"): column("memory_pool_kv_hit_ratio"),
            },
            title=_("Fragmentation and prefix-cache hit ratio per supernode"),
            y_format=".0%",
        ),
        "hbm_over_time": charts.timeseries(
            {
                _("live"): s["cluster_hbm_live_ratio"],
                _("reserved"): s["cluster_hbm_reserved_ratio"],
                _("KV hit ratio (cumulative)"): s["cluster_kv_hit_ratio"],
            },
            title=_("Cluster HBM live vs reserved, and KV hit ratio"),
            y_format=".0%",
        ),
        "pressure": charts.timeseries(
            {
                _("allocation failures/s"): s["memory_pool_allocation_failures_per_second"],
                _("evictions/s"): s["memory_pool_kv_evictions_per_second"],
            },
            title=_("Allocation failures and prefix-cache evictions (all pools)"),
            y_title=_("per second"),
        ),
        "offload": charts.timeseries(
            {_("KV offload to DRAM"): s["offload_bytes_per_second"]},
            title=_("KV offload traffic to the DRAM tier (per simulated second)")
            if data.offload_per_simulated_second
            else _("KV offload traffic to the DRAM tier"),
            y_unit="bytes_per_second",
        ),
    }
    pool_table = table(
        ["pool", *POOL_METRICS],
        [_("pool (supernode)"), *POOL_METRICS],
        [[key, *(values.get(n) for n in POOL_METRICS)] for key, values in data.pools],
    )
    tables = {
        "pools": pool_table,
        "hbm_over_time": series_table(
            {
                "hbm_live_ratio": s["cluster_hbm_live_ratio"],
                "hbm_reserved_ratio": s["cluster_hbm_reserved_ratio"],
                "kv_hit_ratio": s["cluster_kv_hit_ratio"],
            }
        ),
        "pressure": series_table(
            {
                "allocation_failures_per_second": s["memory_pool_allocation_failures_per_second"],
                "evictions_per_second": s["memory_pool_kv_evictions_per_second"],
            }
        ),
        "offload": series_table({"offload_bytes_per_second": s["offload_bytes_per_second"]}),
    }
    for name in ("hbm", "dram", "fragmentation"):
        tables[name] = pool_table
    return {
        "kpis": [],
        "figures": figures,
        "tables": tables,
        "lru_baseline_reported": data.lru_baseline_reported,
    }
