"""Per-step metrics snapshot: NumPy arrays per entity kind, flattened to rows on demand.

:func:`build_snapshot` is a pure read of the state and of the step's outputs
(:class:`StepResult`): it changes nothing and draws no random number, so building it twice
gives the same snapshot. Power and temperature are the thermal mechanism's outputs
(:mod:`.mechanisms.thermals`); card activity comes from :func:`card_activity`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .metrics_catalog import METRICS
from .sched.policy import in_window
from .serving_metrics import cluster_values as serving_cluster
from .serving_metrics import workload_values as serving_workload
from .traffic import uplink_utilisation

if TYPE_CHECKING:  # annotations only
    from .state import EngineState
    from .world import World


@dataclass(frozen=True)
class StepResult:
    """What one step produced (not state): serving latency, training rates, memory figures,
    power and temperature readings, and the step length."""

    lat: dict
    train: dict
    mem: dict
    heat: dict
    dt: float


class Snapshot:
    """Metrics of one step. ``values[entity_kind][metric]`` is a float or an array."""

    def __init__(
        self,
        t: float,
        keys: dict,
        values: dict[str, dict],
        serving_hist: dict | Callable[[], dict] | None = None,
    ) -> None:
        self.t = t
        self._keys = keys  # entity_kind -> callable returning the key list
        self.values = values
        # {histogram: (workloads, bounds + 2)} bucket counts of the step's sampled requests
        # (``serving_histograms``), rows aligned with the workload keys; NaN rows: none.
        # May be given as a function: built on first read (a run that never exports them,
        # e.g. ``compare``, skips padding thousands of job rows every step).
        self._serving_hist = serving_hist

    @property
    def serving_hist(self) -> dict:
        """{histogram: (workloads, bounds + 2)} bucket counts (see ``__init__``)."""
        if callable(self._serving_hist):
            self._serving_hist = self._serving_hist()
        return self._serving_hist or {}

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


def card_activity(w: World, st: EngineState, lat: dict, train: dict):
    """Per-card busy share and FLOPs utilisation of the step (0 on failed or free cards)."""
    hw, svc, n_j, n_s = w.hw, w.svc, w.jobs.n, w.svc.n
    owner = st.cards.owner
    healthy = st.cards.health > 0
    oi = np.where(owner >= 0, owner, n_j + n_s)
    w_busy = np.concatenate([train["busy"], lat["busy"], [0.0]])
    rep = st.services.card_counts() / svc.tp
    s_flops = lat["flops"] / np.maximum(rep * svc.tp * hw.peak_flops, 1.0)
    w_flops = np.concatenate([train["mfu"] * train["busy"], np.minimum(s_flops, 1.0), [0.0]])
    return np.where(healthy, w_busy[oi], 0.0), np.where(healthy, w_flops[oi], 0.0)


def build_snapshot(w: World, st: EngineState, res: StepResult) -> Snapshot:
    """Assemble the step's metrics from the mechanisms' state and the step's outputs."""
    idx, hw, svc, jt = w.idx, w.hw, w.svc, w.jobs
    scen = w.scenario
    lat, train, mem, dt = res.lat, res.train, res.mem, res.dt
    cards, jobs, services, faults = st.cards, st.jobs, st.services, st.faults
    n_j, n_s = jt.n, svc.n
    healthy = cards.health > 0
    alloc = (cards.owner >= 0) & healthy
    oi = np.where(cards.owner >= 0, cards.owner, n_j + n_s)
    rep = services.card_counts() / svc.tp
    util, fl = card_activity(w, st, lat, train)
    power, temp, it_power = res.heat["power"], res.heat["temperature"], res.heat["it_power"]
    n_h = max(int(healthy.sum()), 1)
    agg = mem["agg"]

    def per(groups: np.ndarray, w: np.ndarray, n: int) -> np.ndarray:
        return np.bincount(groups, weights=w, minlength=n)

    sn_cards = per(idx.card_sn, healthy.astype(float), idx.n_supernodes)
    rack_cards = np.maximum(idx.cards_per_rack, 1)
    node_cards = np.bincount(idx.card_node, minlength=idx.n_nodes)
    # Link load: cards of multi-rack jobs push comm_share x cross-boundary fraction upward,
    # each card's flow on the one live uplink its hash picks (traffic.py: ECMP).
    jr = jobs.racks.astype(float)
    w_link = np.concatenate([train["comm_share"] * (1 - 1 / np.maximum(jr, 1)), np.zeros(n_s + 1)])
    link_util = uplink_utilisation(
        idx.card_rack,
        cards.owner,
        w_link[oi] * scen.topology.inter_rack_convergence,
        idx.link_rack,
        faults.link_up,
        rack_cards,
        scen.topology.uplinks_per_rack,
    )
    rerouting = faults.rerouting(st.t, dt)

    nan_j, nan_s = np.full(n_j, np.nan), np.full(n_s, np.nan)
    jcards = jobs.card_counts()
    scards = services.card_counts()
    wl = {
        "workload_allocated_cards": np.concatenate([jcards, scards]),
        "workload_traffic_share_ratio": np.concatenate([jobs.active.astype(float), services.share]),
        "training_samples_per_second": np.concatenate([train["samples_per_s"], nan_s]),
        "training_mfu_ratio": np.concatenate([train["mfu"], nan_s]),
        "training_communication_ratio": np.concatenate([train["comm_share"], nan_s]),
        "training_progress_ratio": np.concatenate([np.minimum(jobs.done / jt.work, 1.0), nan_s]),
        "training_state": np.concatenate([jobs.state.astype(float), nan_s]),
        "training_queue_wait_seconds_total": np.concatenate(
            [
                jobs.wait_total + np.where(jobs.state == 1, st.t - jobs.queued_since, 0.0),
                nan_s,
            ]
        ),
        "training_preemptions_total": np.concatenate([jobs.preempted.astype(float), nan_s]),
        "inference_replicas": np.concatenate([nan_j, rep]),
        "inference_request_rate_per_second": np.concatenate([nan_j, lat["lam"]]),
        "inference_tokens_per_second": np.concatenate([nan_j, lat["tokens_per_s"]]),
        "inference_latency_p50_seconds": np.concatenate([nan_j, lat["p50"]]),
        "inference_latency_p99_seconds": np.concatenate([nan_j, lat["p99"]]),
        "inference_ttft_p99_seconds": np.concatenate([nan_j, lat["ttft_p99"]]),
        "inference_slo_attainment_ratio": np.concatenate([nan_j, lat["attainment"]]),
        "inference_occupancy_ratio": np.concatenate([nan_j, np.minimum(lat["rho"], 1.0)]),
        "inference_kv_hit_ratio": np.concatenate([nan_j, st.memory.hit]),
    }
    wl.update(serving_workload(services, lat, n_j))
    running = train["cards"] > 0
    mfu_c = float((train["mfu"] * train["cards"]).sum() / max(train["cards"].sum(), 1.0))
    reqs = lat["lam"] * dt
    attain = float((lat["attainment"] * reqs).sum() / reqs.sum()) if reqs.sum() > 0 else 1.0
    hbm_total = float(hw.hbm_bytes) * n_h
    c = st.counters
    hour = w.hour_of_day(st.t)
    cluster = {
        "cluster_cards_total": float(cards.owner.size),
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
        "cluster_training_queue_length": float((jobs.state == 1).sum()),
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
    cluster.update(serving_cluster(c, lat, dt))
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
            "accelerator_health_status": cards.health.astype(float),
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
            "link_status": faults.link_up.astype(float),
            "link_utilization_ratio": link_util,
            "link_rerouting_status": rerouting,
        },
        "memory_pool": pool,
        "workload": wl,
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
    step_hist = lat.get("serving_hist", {})

    def hist() -> dict:
        return {
            name: np.vstack([np.full((n_j, counts.shape[1]), np.nan), counts])
            for name, counts in step_hist.items()
        }

    return Snapshot(st.t, keys, values, serving_hist=hist)
