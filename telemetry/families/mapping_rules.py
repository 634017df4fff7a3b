"""The catalogue metrics dcgm- and npu-exporter fields map onto, and how (unit factors).

Pure data for :mod:`telemetry.families.mapping` (docs/architecture.md §5).
"""

from __future__ import annotations

from dataclasses import dataclass

from telemetry.families.mapping_pass import MIB

__all__ = ["MAPPED_METRICS", "RULES", "Rule"]

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
class Rule:
    metric: str
    factor: float = 1.0
    divisor: float = 1.0  # divide rather than multiply by 0.01 so 37 % is exactly 0.37
    counter: bool = False  # the sample name may carry a `_total` appended by a client library


# npu-exporter's "MB" is taken as 2**20 bytes: its HBM capacities are powers of two
# (65536 MB on a 64 GB card). Bandwidth "MB/s" is read the same way for consistency within
# the exporter; Huawei does not document it and the difference from 1e6 is under 5 %.
RULES: dict[str, Rule] = {
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": Rule("accelerator_utilization_ratio"),
    "DCGM_FI_DEV_GPU_UTIL": Rule("accelerator_utilization_ratio", divisor=100),
    "DCGM_FI_DEV_FB_USED": Rule("accelerator_hbm_used_bytes", factor=MIB),
    "DCGM_FI_DEV_GPU_TEMP": Rule("accelerator_temperature_celsius"),
    "DCGM_FI_DEV_POWER_USAGE": Rule("accelerator_power_watts"),
    "DCGM_FI_DEV_SM_CLOCK": Rule("accelerator_sm_clock_hertz", factor=1e6),
    "DCGM_FI_DEV_XID_ERRORS": Rule("accelerator_xid_last"),
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": Rule(
        "accelerator_energy_joules_total", divisor=1000, counter=True
    ),
    "npu_chip_info_utilization": Rule("accelerator_utilization_ratio", divisor=100),
    "npu_chip_info_hbm_used_memory": Rule("accelerator_hbm_used_bytes", factor=MIB),
    "npu_chip_info_hbm_total_memory": Rule("accelerator_hbm_total_bytes", factor=MIB),
    "npu_chip_info_temperature": Rule("accelerator_temperature_celsius"),
    "npu_chip_info_power": Rule("accelerator_power_watts"),
    "npu_chip_info_health_status": Rule("accelerator_health_status"),
    "npu_chip_info_link_status": Rule("accelerator_link_up"),
    "npu_chip_info_bandwidth_rx": Rule("accelerator_network_receive_bytes_per_second", factor=MIB),
    "npu_chip_info_bandwidth_tx": Rule("accelerator_network_transmit_bytes_per_second", factor=MIB),
    "machine_npu_nums": Rule("node_accelerators"),
}
