"""The one catalogue of metrics the twin emits (Prometheus-style names, base units).

Each entry is ``(name, unit, entity_kind, description)``. Entity kinds: ``cluster``,
``supernode``, ``rack``, ``node``, ``accelerator``, ``link``, ``memory_pool``, ``workload``.
Counters end in ``_total`` and are cumulative since the run started; everything else is a gauge
for the last step. Ratios are 0..1. Rows are produced by :meth:`Snapshot.rows`.
"""

from __future__ import annotations

from .metric_spec import MetricSpec

_A, _C, _S, _R, _N, _L, _P, _W = (
    "accelerator",
    "cluster",
    "supernode",
    "rack",
    "node",
    "link",
    "memory_pool",
    "workload",
)

METRICS: tuple[MetricSpec, ...] = (
    # accelerators (per-card NumPy arrays in the snapshot)
    MetricSpec(
        "accelerator_utilization_ratio",
        "ratio",
        _A,
        "Fraction of the step the card was executing work (like GPU_UTIL / NPU util).",
    ),
    MetricSpec(
        "accelerator_flops_utilization_ratio",
        "ratio",
        _A,
        "Achieved FLOPs over dense peak (MFU for training cards).",
    ),
    MetricSpec(
        "accelerator_hbm_used_bytes",
        "bytes",
        _A,
        "HBM reserved by the framework or pool on this card (what device tools show).",
    ),
    MetricSpec(
        "accelerator_hbm_live_bytes",
        "bytes",
        _A,
        "HBM holding live data: weights, live KV, training state, activations.",
    ),
    MetricSpec("accelerator_hbm_total_bytes", "bytes", _A, "HBM capacity of the card."),
    MetricSpec("accelerator_temperature_celsius", "celsius", _A, "Die temperature."),
    MetricSpec("accelerator_power_watts", "watts", _A, "Board power draw."),
    MetricSpec("accelerator_health_status", "status", _A, "1 healthy, 0 unhealthy, -1 unknown."),
    MetricSpec(
        "accelerator_allocated_status",
        "status",
        _A,
        "1 when the card is allocated to a workload, else 0.",
    ),
    # nodes, racks, supernodes
    MetricSpec("node_utilization_ratio", "ratio", _N, "Mean accelerator utilization on the node."),
    MetricSpec("node_power_watts", "watts", _N, "Accelerator power of the node."),
    MetricSpec("rack_utilization_ratio", "ratio", _R, "Mean accelerator utilization in the rack."),
    MetricSpec("rack_power_watts", "watts", _R, "Accelerator power of the rack."),
    MetricSpec("rack_allocated_cards", "cards", _R, "Cards allocated to workloads in the rack."),
    MetricSpec("supernode_utilization_ratio", "ratio", _S, "Mean accelerator utilization."),
    MetricSpec("supernode_allocated_cards", "cards", _S, "Cards allocated to workloads."),
    MetricSpec("supernode_healthy_cards", "cards", _S, "Healthy cards."),
    MetricSpec("supernode_power_watts", "watts", _S, "Accelerator power of the supernode."),
    # links (rack uplinks)
    MetricSpec("link_status", "status", _L, "1 up, 0 down (optical module / link failure)."),
    MetricSpec(
        "link_utilization_ratio",
        "ratio",
        _L,
        "Approximate uplink load from training collectives crossing the rack.",
    ),
    MetricSpec(
        "link_rerouting_status",
        "status",
        _L,
        "1 while traffic is being rerouted after a failure (self-healing), else 0.",
    ),
    # memory pool (one per supernode)
    MetricSpec("memory_pool_hbm_total_bytes", "bytes", _P, "Pooled HBM of healthy cards."),
    MetricSpec("memory_pool_hbm_reserved_bytes", "bytes", _P, "HBM reserved (allocated)."),
    MetricSpec("memory_pool_hbm_live_bytes", "bytes", _P, "HBM holding live data."),
    MetricSpec("memory_pool_hbm_free_bytes", "bytes", _P, "HBM neither reserved nor failed."),
    MetricSpec("memory_pool_kv_live_bytes", "bytes", _P, "KV cache of in-flight sequences."),
    MetricSpec("memory_pool_kv_allocated_bytes", "bytes", _P, "KV blocks allocated (paged)."),
    MetricSpec("memory_pool_prefix_cache_bytes", "bytes", _P, "HBM holding reusable prefixes."),
    MetricSpec("memory_pool_dram_total_bytes", "bytes", _P, "Host-DRAM tier capacity."),
    MetricSpec(
        "memory_pool_dram_used_bytes",
        "bytes",
        _P,
        "Host-DRAM tier used: shared weight copies and offloaded KV.",
    ),
    MetricSpec(
        "memory_pool_internal_fragmentation_ratio",
        "ratio",
        _P,
        "Empty bytes inside allocated KV blocks / allocated KV bytes.",
    ),
    MetricSpec(
        "memory_pool_external_fragmentation_ratio",
        "ratio",
        _P,
        "Free HBM stranded on allocated cards / all free HBM.",
    ),
    MetricSpec("memory_pool_kv_hit_ratio", "ratio", _P, "Prefix-cache hit ratio in the step."),
    MetricSpec(
        "memory_pool_kv_evictions_per_second",
        "per_second",
        _P,
        "Prefix-cache chunk evictions per second.",
    ),
    MetricSpec(
        "memory_pool_allocation_failures_per_second",
        "per_second",
        _P,
        "Requests per second that could not get KV blocks.",
    ),
    # workloads
    MetricSpec("workload_allocated_cards", "cards", _W, "Cards held by the workload."),
    MetricSpec(
        "workload_traffic_share_ratio",
        "ratio",
        _W,
        "Share of the workload routed to this cluster (gray migration).",
    ),
    MetricSpec("training_samples_per_second", "per_second", _W, "Training samples/s."),
    MetricSpec("training_mfu_ratio", "ratio", _W, "Model FLOPs utilization after placement."),
    MetricSpec("training_communication_ratio", "ratio", _W, "Communication share of step time."),
    MetricSpec("training_progress_ratio", "ratio", _W, "Samples done / samples required."),
    MetricSpec("training_state", "status", _W, "0 not submitted, 1 queued, 2 running, 3 done."),
    MetricSpec("training_queue_wait_seconds_total", "seconds", _W, "Time spent queued."),
    MetricSpec("training_preemptions_total", "count", _W, "Times preempted by inference."),
    MetricSpec("inference_replicas", "replicas", _W, "Serving replicas (TP groups)."),
    MetricSpec("inference_request_rate_per_second", "per_second", _W, "Offered requests/s."),
    MetricSpec("inference_tokens_per_second", "per_second", _W, "Prompt+output tokens/s."),
    MetricSpec("inference_latency_p50_seconds", "seconds", _W, "Median request latency."),
    MetricSpec("inference_latency_p99_seconds", "seconds", _W, "P99 request latency."),
    MetricSpec("inference_ttft_p99_seconds", "seconds", _W, "P99 time to first token."),
    MetricSpec(
        "inference_slo_attainment_ratio",
        "ratio",
        _W,
        "Share of requests meeting both the latency and TTFT SLO.",
    ),
    MetricSpec("inference_occupancy_ratio", "ratio", _W, "Batch-slot occupancy of replicas."),
    MetricSpec("inference_kv_hit_ratio", "ratio", _W, "Prefix-cache hit ratio (smoothed)."),
    # cluster
    MetricSpec("cluster_cards_total", "cards", _C, "Cards in the cluster."),
    MetricSpec("cluster_cards_healthy", "cards", _C, "Healthy cards."),
    MetricSpec("cluster_cards_allocated", "cards", _C, "Cards allocated to workloads."),
    MetricSpec(
        "cluster_training_cards_allocated", "cards", _C, "Cards allocated to training jobs."
    ),
    MetricSpec(
        "cluster_inference_cards_allocated",
        "cards",
        _C,
        "Cards allocated to inference replicas.",
    ),
    MetricSpec(
        "cluster_utilization_allocated_ratio", "ratio", _C, "Allocated cards / healthy cards."
    ),
    MetricSpec(
        "cluster_utilization_busy_ratio",
        "ratio",
        _C,
        "Mean accelerator utilization over healthy cards.",
    ),
    MetricSpec("cluster_mfu_ratio", "ratio", _C, "Card-weighted MFU of running training."),
    MetricSpec("cluster_hbm_live_ratio", "ratio", _C, "Live HBM bytes / HBM capacity."),
    MetricSpec("cluster_hbm_reserved_ratio", "ratio", _C, "Reserved HBM bytes / HBM capacity."),
    MetricSpec("cluster_power_watts", "watts", _C, "Accelerator power (IT)."),
    MetricSpec("cluster_facility_power_watts", "watts", _C, "IT power x PUE."),
    MetricSpec("cluster_energy_joules_total", "joules", _C, "Facility energy since start."),
    MetricSpec("cluster_training_samples_per_second", "per_second", _C, "All training jobs."),
    MetricSpec("cluster_inference_tokens_per_second", "per_second", _C, "All services."),
    MetricSpec(
        "cluster_inference_slo_attainment_ratio",
        "ratio",
        _C,
        "Request-weighted SLO attainment over services.",
    ),
    MetricSpec("cluster_training_queue_length", "jobs", _C, "Jobs submitted and waiting."),
    MetricSpec("cluster_training_running_jobs", "jobs", _C, "Jobs running."),
    MetricSpec("cluster_preemptions_total", "count", _C, "Training preemptions by inference."),
    MetricSpec("cluster_card_failures_total", "count", _C, "Card failures."),
    MetricSpec("cluster_link_failures_total", "count", _C, "Link failures."),
    MetricSpec("cluster_kv_offload_bytes_total", "bytes", _C, "KV bytes offloaded to DRAM."),
    MetricSpec("cluster_kv_hit_ratio", "ratio", _C, "Cumulative prefix-cache hit ratio."),
    # The twin's own clock, so charts can show simulated time of day next to wall time (the
    # twin runs faster than real time: a wall-clock hour may hold a whole simulated night).
    MetricSpec(
        "twin_simulated_hour_of_day",
        "hours",
        _C,
        "Simulated hour of day (0-24) at the end of the step: start_hour + simulated time.",
    ),
    MetricSpec(
        "twin_simulated_seconds_total",
        "seconds",
        _C,
        "Simulated seconds since the run started (rates per simulated second divide by it).",
    ),
    MetricSpec(
        "twin_night_window_active",
        "bool",
        _C,
        "1 while the simulated hour lies in the policy's night window (training by night).",
    ),
)

# Serving metrics (issue 13): TTFT / TPOT / queue, defined in serving_metrics.py.
from .serving_metrics import SERVING_METRICS  # noqa: E402

METRICS = METRICS + SERVING_METRICS

BY_NAME: dict[str, MetricSpec] = {m.name: m for m in METRICS}
