"""Exporter text shaped like public captures: dcgm-exporter with MIG slices and Kubernetes pod
mapping (labels as in NVIDIA/dcgm-exporter issues #68 and #272: ``GPU_I_PROFILE``,
``GPU_I_ID``, ``Hostname``, ``container``/``namespace``/``pod``), and npu-exporter, which names
no host (three of them behind one address is how a node with three exporters looks to
Prometheus). Values are ours; label sets and units are the exporters'."""

from __future__ import annotations

import time

A100 = "GPU-ed1353d6-52ba-8793-7230-4d5d3eb68167"
MIG_SLICES = (
    # (GPU_I_PROFILE, GPU_I_ID, namespace, pod, FB used MiB, GR engine active)
    ("3g.40gb", "1", "acme-bank", "llama-70b-0", 39000, 0.81),
    ("4g.40gb", "2", "panda-labs", "asr-7f9c", 1200, 0.12),
)


def dcgm_mig_text(*, hostname: str = "dgx-a100-01", xid: int = 0) -> str:
    """One A100 80GB split into two MIG slices, each used by a pod of another tenant.
    Under MIG dcgm-exporter reports PROF fields per slice (no DEV_GPU_UTIL)."""
    rows: dict[str, list[str]] = {}
    for profile, gi, namespace, pod, used, active in MIG_SLICES:
        labels = (
            f'gpu="0",UUID="{A100}",device="nvidia0",modelName="NVIDIA A100 80GB PCIe",'
            f'GPU_I_PROFILE="{profile}",GPU_I_ID="{gi}",Hostname="{hostname}",'
            f'DCGM_FI_DRIVER_VERSION="535.129.03",container="main",namespace="{namespace}",'
            f'pod="{pod}"'
        )
        free = 40448 - used
        for name, value in (
            ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", f"{active:.6f}"),
            ("DCGM_FI_DEV_FB_USED", used),
            ("DCGM_FI_DEV_FB_FREE", free),
            ("DCGM_FI_DEV_XID_ERRORS", xid),
        ):
            rows.setdefault(name, []).append(f"{name}{{{labels}}} {value}")
    out = []
    for name, lines in rows.items():
        out += [f"# HELP {name} {name}.", f"# TYPE {name} gauge", *lines]
    return "\n".join(out) + "\n"


class NpuExporterCard:
    """One npu-exporter of 8 chips (``first`` .. ``first+7`` as vdie ids), millisecond
    timestamps stamped per request as the real one does; ``vdie=False`` leaves ``vdie_id``
    out, as older firmware does."""

    def __init__(self, serial: str, *, vdie: bool = True, util: int = 50) -> None:
        self.serial, self.vdie, self.util = serial, vdie, util

    def __call__(self) -> str:
        now_ms = int(time.time() * 1000)
        rows = ["# TYPE npu_chip_info_utilization gauge"]
        for chip in range(8):
            vdie = f',vdie_id="{self.serial}-{chip}"' if self.vdie else ""
            rows.append(
                f'npu_chip_info_utilization{{id="{chip}",model_name="Ascend910B"{vdie}}} '
                f"{self.util + chip} {now_ms}"
            )
        return "\n".join(rows) + "\n"
