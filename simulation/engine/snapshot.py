"""Per-step metrics snapshot: NumPy arrays per entity kind, flattened to rows on demand.

Power and temperature model (approximation): board power = idle + (TDP - idle) x activity with
activity = 0.5 x busy + 0.5 x min(1, FLOPs utilization / 0.5) (memory-bound decode draws less
than dense training); temperature relaxes towards inlet + 0.06 C/W x power with a 120 s time
constant, plus small sensor noise.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from .metrics_catalog import METRICS
from .sched.policy import in_window
from .serving_metrics import cluster_values as serving_cluster
from .serving_metrics import workload_values as serving_workload

if TYPE_CHECKING:  # annotations only: the engine imports this module
    from .engine import Engine


class Snapshot:
    """Metrics of one step. ``values[entity_kind][metric]`` is a float or an array."""

    def __init__(self, t: float, keys: dict, values: dict[str, dict]) -> None:
        self.t = t
        self._keys = keys  # entity_kind -> callable returning the key list
        self.values = values

    def __getitem__(self, metric: str):
        for vals in self.values.values():
            if metric in vals:
                return vals[metric]
        raise KeyError(metric)

    def keys(self, kind: str) -> list[str]:
        """Entity keys of ``kind`` in the order of the per-entity arrays."""
        return list(self._keys[kind]())

    @property
    def cluster(self) -> dict[str, float]:
        """Cluster-level scalar metrics."""
        return self.values["cluster"]

    def rows(self, kinds: tuple[str, ...] | None = None) -> Iterator[tuple[str, str, str, float]]:
        """Yield ``(metric_name, entity_kind, entity_key, value)``; NaN (n/a) values skipped."""
        for spec in METRICS:
            kind = spec.entity_kind
            if kinds is not None and kind not in kinds:
                continue
            v = self.values.get(kind, {}).get(spec.name)
            if v is None:
                continue
            if kind == "cluster":
                yield (spec.name, kind, "cluster", float(v))
                continue
            keys = self._keys[kind]()
            arr = np.asarray(v, dtype=float)
            ok = ~np.isnan(arr)
            for key, val in zip(np.asarray(keys, dtype=object)[ok], arr[ok].tolist(), strict=True):
                yield (spec.name, kind, key, val)


def build_snapshot(eng: Engine, lat: dict, train: dict, mem: dict, dt: float) -> Snapshot:
    """Assemble the step's metrics from the scheduler, perf, memory and fault state."""
    st, idx, hw, svc, jt = eng.state, eng.idx, eng.hw, eng.svc, eng.jobs
    scen = eng.scenario
    n_j, n_s = jt.n, svc.n
    healthy = st.health > 0
    alloc = (st.owner >= 0) & healthy
    oi = np.where(st.owner >= 0, st.owner, n_j + n_s)
    w_busy = np.concatenate([train["busy"], lat["busy"], [0.0]])
    rep = np.array([c.size for c in st.svc_cards], dtype=float) / svc.tp
    s_flops = lat["flops"] / np.maximum(rep * svc.tp * hw.peak_flops, 1.0)
    w_flops = np.concatenate([train["mfu"] * train["busy"], np.minimum(s_flops, 1.0), [0.0]])
    util = np.where(healthy, w_busy[oi], 0.0)
    fl = np.where(healthy, w_flops[oi], 0.0)
    rng = st.np_rng
    activity = np.clip(0.5 * util + 0.5 * np.minimum(1.0, fl / 0.5), 0.0, 1.0)
    power = hw.idle_watts + (hw.tdp_watts - hw.idle_watts) * activity
    power = power * (1.0 + rng.normal(0.0, 0.01, power.size))
    power = np.where(healthy, power, 0.0)
    target = scen.inlet_temp_celsius + 0.06 * power
    alpha = 1.0 - np.exp(-dt / 120.0)
    st.temperature += (alpha * (target - st.temperature)).astype(np.float32)
    temp = st.temperature + rng.normal(0.0, 0.3, power.size).astype(np.float32)
    it_power = float(power.sum())
    st.counters["energy_joules"] += it_power * scen.pue * dt
    n_h = max(int(healthy.sum()), 1)
    agg = mem["agg"]

    def per(groups: np.ndarray, w: np.ndarray, n: int) -> np.ndarray:
        return np.bincount(groups, weights=w, minlength=n)

    sn_cards = per(idx.card_sn, healthy.astype(float), idx.n_supernodes)
    rack_cards = np.maximum(idx.cards_per_rack, 1)
    node_cards = np.bincount(idx.card_node, minlength=idx.n_nodes)
    # Link load: cards of multi-rack jobs push comm_share x cross-boundary fraction upward.
    jr = st.job_racks.astype(float)
    w_link = np.concatenate([train["comm_share"] * (1 - 1 / np.maximum(jr, 1)), np.zeros(n_s + 1)])
    rack_load = per(idx.card_rack, w_link[oi], idx.n_racks) / rack_cards
    rack_load = rack_load * scen.topology.inter_rack_convergence
    up = scen.topology.uplinks_per_rack
    n_up = np.maximum(up - np.bincount(idx.link_rack[~st.link_up], minlength=idx.n_racks), 1)
    link_util = np.where(st.link_up, np.minimum(1.0, (rack_load * up / n_up)[idx.link_rack]), 0.0)
    rerouting = np.zeros(idx.n_links)
    for link, until in st.link_reroute_until.items():
        rerouting[link] = 1.0 if until > st.t - dt else 0.0

    nan_j, nan_s = np.full(n_j, np.nan), np.full(n_s, np.nan)
    jcards = np.array([c.size for c in st.job_cards], dtype=float)
    scards = np.array([c.size for c in st.svc_cards], dtype=float)
    w = {
        "workload_allocated_cards": np.concatenate([jcards, scards]),
        "workload_traffic_share_ratio": np.concatenate([st.job_active.astype(float), st.svc_share]),
        "training_samples_per_second": np.concatenate([train["samples_per_s"], nan_s]),
        "training_mfu_ratio": np.concatenate([train["mfu"], nan_s]),
        "training_communication_ratio": np.concatenate([train["comm_share"], nan_s]),
        "training_progress_ratio": np.concatenate([np.minimum(st.job_done / jt.work, 1.0), nan_s]),
        "training_state": np.concatenate([st.job_state.astype(float), nan_s]),
        "training_queue_wait_seconds_total": np.concatenate(
            [
                st.job_wait_total + np.where(st.job_state == 1, st.t - st.job_queued_since, 0.0),
                nan_s,
            ]
        ),
        "training_preemptions_total": np.concatenate([st.job_preemptions.astype(float), nan_s]),
        "inference_replicas": np.concatenate([nan_j, rep]),
        "inference_request_rate_per_second": np.concatenate([nan_j, lat["lam"]]),
        "inference_tokens_per_second": np.concatenate([nan_j, lat["tokens_per_s"]]),
        "inference_latency_p50_seconds": np.concatenate([nan_j, lat["p50"]]),
        "inference_latency_p99_seconds": np.concatenate([nan_j, lat["p99"]]),
        "inference_ttft_p99_seconds": np.concatenate([nan_j, lat["ttft_p99"]]),
        "inference_slo_attainment_ratio": np.concatenate([nan_j, lat["attainment"]]),
        "inference_occupancy_ratio": np.concatenate([nan_j, np.minimum(lat["rho"], 1.0)]),
        "inference_kv_hit_ratio": np.concatenate([nan_j, st.svc_hit]),
    }
    w.update(serving_workload(eng, lat, n_j))
    running = train["cards"] > 0
    mfu_c = float((train["mfu"] * train["cards"]).sum() / max(train["cards"].sum(), 1.0))
    reqs = lat["lam"] * dt
    attain = float((lat["attainment"] * reqs).sum() / reqs.sum()) if reqs.sum() > 0 else 1.0
    hbm_total = float(hw.hbm_bytes) * n_h
    c = st.counters
    hour = eng.hour_of_day(st.t)
    cluster = {
        "cluster_cards_total": float(st.owner.size),
        "cluster_cards_healthy": float(n_h),
        "cluster_cards_allocated": float(alloc.sum()),
        # The day/night split of a unified cluster, as scalars so fleet charts read one row
        # per step instead of every workload's frame.
        "cluster_training_cards_allocated": float(jcards.sum()),
        "cluster_inference_cards_allocated": float(scards.sum()),
        "cluster_utilization_allocated_ratio": float(alloc.sum()) / n_h,
        "cluster_utilization_busy_ratio": float(util.sum()) / n_h,
        "cluster_mfu_ratio": mfu_c,
        "cluster_hbm_live_ratio": float(agg["hbm_live"].sum()) / hbm_total,
        "cluster_hbm_reserved_ratio": float(agg["hbm_reserved"].sum()) / hbm_total,
        "cluster_power_watts": it_power,
        "cluster_facility_power_watts": it_power * scen.pue,
        "cluster_energy_joules_total": c["energy_joules"],
        "cluster_training_samples_per_second": float(train["samples_per_s"].sum()),
        "cluster_inference_tokens_per_second": float(lat["tokens_per_s"].sum()),
        "cluster_inference_slo_attainment_ratio": attain,
        "cluster_training_queue_length": float((st.job_state == 1).sum()),
        "cluster_training_running_jobs": float(running.sum()),
        "cluster_preemptions_total": float(c["preemptions"]),
        "cluster_card_failures_total": float(c["card_failures"]),
        "cluster_link_failures_total": float(c["link_failures"]),
        "cluster_kv_offload_bytes_total": float(c["kv_offload_bytes"]),
        "cluster_kv_hit_ratio": c["kv_hits"] / c["kv_lookups"] if c["kv_lookups"] else 0.0,
        "twin_simulated_hour_of_day": hour,
        "twin_simulated_seconds_total": float(st.t),
        "twin_night_window_active": float(in_window(hour, scen.policy.night_window)),
    }
    cluster.update(serving_cluster(eng, lat, dt))
    free_b = np.maximum(agg["hbm_total"] - agg["hbm_reserved"], 0.0)
    pool = {
        "memory_pool_hbm_total_bytes": agg["hbm_total"],
        "memory_pool_hbm_reserved_bytes": agg["hbm_reserved"],
        "memory_pool_hbm_live_bytes": agg["hbm_live"],
        "memory_pool_hbm_free_bytes": free_b,
        "memory_pool_kv_live_bytes": agg["kv_live"],
        "memory_pool_kv_allocated_bytes": agg["kv_allocated"],
        "memory_pool_prefix_cache_bytes": agg["prefix_cache"],
        "memory_pool_dram_total_bytes": agg["dram_total"],
        "memory_pool_dram_used_bytes": agg["dram_used"],
        "memory_pool_internal_fragmentation_ratio": np.where(
            agg["kv_allocated"] > 0,
            agg["kv_internal_frag"] / np.maximum(agg["kv_allocated"], 1.0),
            0.0,
        ),
        "memory_pool_external_fragmentation_ratio": np.where(
            agg["free"] > 0, agg["stranded"] / np.maximum(agg["free"], 1.0), 0.0
        ),
        "memory_pool_kv_hit_ratio": np.where(
            agg["lookups"] > 0, agg["hits"] / np.maximum(agg["lookups"], 1e-9), 0.0
        ),
        "memory_pool_kv_evictions_per_second": agg["evictions"] / dt,
        "memory_pool_allocation_failures_per_second": agg["alloc_failures"] / dt,
    }
    values = {
        "accelerator": {
            "accelerator_utilization_ratio": util,
            "accelerator_flops_utilization_ratio": fl,
            "accelerator_hbm_used_bytes": mem["card_reserved"],
            "accelerator_hbm_live_bytes": mem["card_live"],
            "accelerator_hbm_total_bytes": np.full(util.size, float(hw.hbm_bytes)),
            "accelerator_temperature_celsius": temp,
            "accelerator_power_watts": power,
            "accelerator_health_status": st.health.astype(float),
            "accelerator_allocated_status": alloc.astype(float),
        },
        "node": {
            "node_utilization_ratio": per(idx.card_node, util, idx.n_nodes) / node_cards,
            "node_power_watts": per(idx.card_node, power, idx.n_nodes),
        },
        "rack": {
            "rack_utilization_ratio": per(idx.card_rack, util, idx.n_racks) / rack_cards,
            "rack_power_watts": per(idx.card_rack, power, idx.n_racks),
            "rack_allocated_cards": per(idx.card_rack, alloc.astype(float), idx.n_racks),
        },
        "supernode": {
            "supernode_utilization_ratio": per(idx.card_sn, util, idx.n_supernodes)
            / np.maximum(idx.cards_per_sn, 1),
            "supernode_allocated_cards": per(idx.card_sn, alloc.astype(float), idx.n_supernodes),
            "supernode_healthy_cards": sn_cards,
            "supernode_power_watts": per(idx.card_sn, power, idx.n_supernodes),
        },
        "link": {
            "link_status": st.link_up.astype(float),
            "link_utilization_ratio": link_util,
            "link_rerouting_status": rerouting,
        },
        "memory_pool": pool,
        "workload": w,
        "cluster": cluster,
    }
    keys = {
        "accelerator": idx.card_keys,
        "node": lambda: [idx.node_key(i) for i in range(idx.n_nodes)],
        "rack": lambda: [idx.rack_key(i) for i in range(idx.n_racks)],
        "supernode": lambda: [idx.supernode_key(i) for i in range(idx.n_supernodes)],
        "memory_pool": lambda: [idx.supernode_key(i) for i in range(idx.n_supernodes)],
        "link": idx.link_keys,
        "workload": lambda: jt.names + svc.names,
    }
    return Snapshot(st.t, keys, values)
