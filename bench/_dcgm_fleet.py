"""A synthetic dcgm-exporter fleet: 8 GPUs per host, the 22 fields of dcgm-exporter's default
counters, with the labels dcgm-exporter (3.x, Kubernetes mode) puts on every series.

Used by ``bench_remote_write.py`` (served to a real Prometheus) and its profiling mode (the same
series as one remote-write body built in-process).
"""

from __future__ import annotations

import random

CARDS_PER_HOST = 8
MODEL = "NVIDIA H100 80GB HBM3"
DRIVER = "535.129.03"
# dcgm-exporter's etc/default-counters.csv (3.3), less the two NVLink/VGPU fields that H100
# boxes without vGPU leave blank: 22 fields.
FIELDS: tuple[tuple[str, str, float, float], ...] = (
    # name, type, low, high
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", 1410, 1980),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", 2619, 2619),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", 30, 70),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", 30, 85),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", 70, 700),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", 1e9, 2e9),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", 0, 0),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", 0, 100),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", 0, 100),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", 0, 0),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", 0, 0),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", 0, 0),
    ("DCGM_FI_DEV_FB_FREE", "gauge", 0, 40000),
    ("DCGM_FI_DEV_FB_USED", "gauge", 0, 40000),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", 0, 0),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", 0, 0),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", 0, 0),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", 0, 1),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", 0, 1),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge", 0, 1),
    ("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", 1e6, 1e9),
    ("DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", 1e6, 1e9),
)


def hostname(host: int) -> str:
    return f"gpu-{host:05d}"


def gpu_uuid(host: int, gpu: int) -> str:
    n = host * CARDS_PER_HOST + gpu
    return f"GPU-{n:08x}-5f2e-4c1a-9b7d-{(n * 2654435761) % 16**12:012x}"


def card_labels(host: int, gpu: int) -> dict[str, str]:
    """The labels dcgm-exporter puts on one GPU's series (pod attribution on half the cards)."""
    labels = {
        "gpu": str(gpu),
        "UUID": gpu_uuid(host, gpu),
        "pci_bus_id": f"00000000:{0x18 + gpu * 0x10:02X}:00.0",
        "device": f"nvidia{gpu}",
        "modelName": MODEL,
        "Hostname": hostname(host),
        "DCGM_FI_DRIVER_VERSION": DRIVER,
    }
    if gpu % 2 == 0:
        labels.update(namespace="team-a", pod=f"train-{host:05d}-{gpu // 2}", container="trainer")
    return labels


def _value(rng: random.Random, low: float, high: float) -> float:
    return low if low == high else round(rng.uniform(low, high), 2)


def exposition(host: int, seed: int = 0) -> str:
    """One host's dcgm-exporter page (no timestamps, as dcgm-exporter sends)."""
    rng = random.Random(host * 1000 + seed)
    out = []
    cards = [card_labels(host, gpu) for gpu in range(CARDS_PER_HOST)]
    rendered = [",".join(f'{k}="{v}"' for k, v in labels.items()) for labels in cards]
    for name, kind, low, high in FIELDS:
        out.append(f"# HELP {name} {name}.")
        out.append(f"# TYPE {name} {kind}")
        for labels in rendered:
            value = _value(rng, low, high)
            out.append(f"{name}{{{labels}}} {value:g}")
    return "\n".join(out) + "\n"


def remote_write_series(
    hosts: range, timestamp_ms: int, *, job: str = "dcgm", port: int = 9400
) -> list[tuple[dict[str, str], list[tuple[int, float]]]]:
    """The series Prometheus would forward for ``hosts`` scraped at ``timestamp_ms``: the
    exporter's labels plus ``instance`` and ``job`` (what ``write_request`` encodes)."""
    rng = random.Random(timestamp_ms)
    series = []
    for host in hosts:
        for name, _kind, low, high in FIELDS:
            for gpu in range(CARDS_PER_HOST):
                labels = {
                    "__name__": name,
                    **card_labels(host, gpu),
                    "instance": f"{hostname(host)}:{port}",
                    "job": job,
                }
                series.append((labels, [(timestamp_ms, _value(rng, low, high))]))
    return series
