"""dcgm-exporter specifics: which utilisation field wins, and NVIDIA health from XID and DCGM
health fields. The mapping is documented in docs/architecture.md §5 and the README.

Pure Python, used by :mod:`telemetry.families.mapping` once per exposition.
"""

from __future__ import annotations

# Current tools (and dcgm-exporter under MIG, which reports no DEV_GPU_UTIL per slice) read
# the graphics-engine activity ratio; DEV_GPU_UTIL is the fallback when a GPU reports no PROF
# field in the same scrape (then it is kept under its own name, not lost).
PROF_UTIL = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
DEV_UTIL = "DCGM_FI_DEV_GPU_UTIL"

# XIDs after which NVIDIA's XID catalogue says the GPU needs a reset, a drain or an RMA
# (double-bit ECC, micro-controller halt, row-remap recording failure, NVLink, fallen off the
# bus, ECC rate/contained/uncontained errors, GSP errors, unrecovered ECC). Application XIDs
# (13, 31, 43, 45 …) say a program faulted, not the card: they leave health as it is.
CRITICAL_XIDS = frozenset({48, 62, 64, 74, 79, 92, 94, 95, 119, 120, 140})

XID_LAST = "DCGM_FI_DEV_XID_ERRORS"  # the last XID the driver reported (0: none)
XID_COUNT = "DCGM_EXP_XID_ERRORS_COUNT"  # dcgm-exporter's per-``xid`` counter (newer builds)
# DCGM health fields: any of these above zero means the card cannot be trusted until reset.
FAILURE_FIELDS = frozenset(
    {
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",  # uncorrectable ECC since the driver loaded
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",  # a row could not be remapped: RMA
        "DCGM_FI_DEV_RETIRED_PENDING",  # pages waiting for retirement: reset needed
    }
)
HEALTH_INPUTS = frozenset({XID_LAST, XID_COUNT}) | FAILURE_FIELDS
HEALTH_SOURCE = "DCGM health (XID, ECC, row remap)"


def health_failing(name: str, value: float, labels: dict[str, str]) -> bool:
    """Whether one health-input sample says the card is unhealthy."""
    if name == XID_LAST:
        return int(value) in CRITICAL_XIDS
    if name == XID_COUNT:
        xid = labels.get("xid", "")
        return value > 0 and xid.isdigit() and int(xid) in CRITICAL_XIDS
    return value > 0
