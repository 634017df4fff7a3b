"""Per-hardware figures the serving model needs beyond the catalog: scale-up fabric, low-precision
compute rates. Kept here (not in ``catalog.HardwareSpec``) so the catalog stays a stable schema.

* ``scaleup_bytes_per_s``: unidirectional bandwidth per card on the scale-up fabric used for
  tensor-parallel collectives and, inside a supernode, expert-parallel all-to-all.
  A100 SXM: NVLink 3, 600 GB/s bidirectional = 300 GB/s per direction; H100 SXM: NVLink 4,
  900 GB/s bidirectional = 450 GB/s per direction (NVIDIA datasheets). Ascend 910C in
  CloudMatrix384: Unified Bus 392 GB/s unidirectional per NPU (Zuo et al., "Serving Large
  Language Models on Huawei CloudMatrix384", arXiv:2506.12708, section 3). 910B: HCCS 8-card
  mesh, 56 GB/s per link x 7 = 392 GB/s aggregate assumed per direction (low confidence).
  950PR/DT: roadmap, 2 TB/s UB announced for Atlas 950 (assumption, low confidence).
* ``scaleout_bytes_per_s``: per-card RDMA (RoCE / InfiniBand) bandwidth between supernodes /
  nodes: 400 Gb/s = 50 GB/s per card (CloudMatrix384 RDMA plane, arXiv:2506.12708; DGX
  ConnectX-7 400 Gb/s per GPU).
* ``allreduce_hop_s`` / ``allreduce_bus_bytes_per_s``: ring all-reduce model
  ``t = 2(n-1) hop + 2(n-1)/n x bytes / bus_bw``, least-squares fitted (relative error) to
  Vidur's published NCCL all-reduce profiling on DGX-A100 and DGX-H100 (2,979 measurements each,
  2 KB-64 MB, 2/4/8 GPUs; https://github.com/microsoft/vidur, ``data/profiling/network/
  {a100,h100}_dgx/all_reduce.csv``, commit 7d47513): A100 3.4 us/hop, 143 GB/s; H100 2.4 us/hop,
  299 GB/s (median error of the fit 15%). Other parts have no public collective measurement:
  their bus bandwidth is the link figure x 0.66 (H100's measured / nominal) and 2.4 us/hop.
* ``fp8_flops`` / ``int8_ops``: dense rates. H100 SXM: 1,979 TFLOPS FP8 / 1,979 TOPS INT8;
  A100: no FP8 (weight-only FP8 runs BF16 math), 624 TOPS INT8 (datasheets). Ascend: INT8 is
  assumed 2x the BF16 rate and FP8 absent on 910B/910C (W8A8 on 910C runs INT8); 950PR/DT:
  1 PFLOPS FP8 (DESIGN.md), INT8 assumed equal.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog import HardwareSpec

TFLOPS = 1e12


@dataclass(frozen=True)
class Fabric:
    """Scale-up / scale-out bandwidth per card and low-precision compute rates."""

    scaleup_bytes_per_s: float
    scaleout_bytes_per_s: float
    fp8_flops: float | None
    int8_ops: float | None
    allreduce_hop_s: float = 2.4e-6
    allreduce_bus_bytes_per_s: float = 0.0  # 0: 0.66 x scaleup_bytes_per_s
    # Cards one scale-up fabric reaches: an 8-GPU NVLink node (DGX/HGX), an 8-NPU HCCS node
    # (910B), the whole 384-NPU CloudMatrix384 supernode over UB (910C), Atlas 950 supernode.
    scaleup_domain: int = 8
    # Expert all-to-all measured per phase inside the scale-up domain (bytes/s per rank, as
    # achieved, so no further efficiency applies) and its per-hop latency; 0 = the link at
    # ``perf.inference.A2A_EFFICIENCY`` for both phases, with ``allreduce_hop_s``.
    a2a_dispatch_bytes_per_s: float = 0.0
    a2a_combine_bytes_per_s: float = 0.0
    a2a_hop_s: float = 0.0

    @property
    def bus_bytes_per_s(self) -> float:
        """Achievable all-reduce bus bandwidth (measured where public, else derated link)."""
        return self.allreduce_bus_bytes_per_s or 0.66 * self.scaleup_bytes_per_s


FABRIC: dict[str, Fabric] = {
    "a100-sxm": Fabric(300e9, 50e9, None, 624 * TFLOPS, 3.4e-6, 143e9),
    "h100-sxm": Fabric(450e9, 50e9, 1979 * TFLOPS, 1979 * TFLOPS, 2.4e-6, 299e9),
    "ascend-910b": Fabric(392e9, 50e9, None, 640 * TFLOPS),
    # H800: the export H100 (same compute and HBM), NVLink cut to 400 GB/s bidirectional
    # (200 GB/s per direction; DeepSeek-V3 report 3.2.2 measures ~160 GB/s), 8 x 400 Gb/s IB.
    # Not a catalog part: :mod:`..validate_current` uses it for DeepSeek's published figures.
    "h800-sxm": Fabric(200e9, 50e9, 1979 * TFLOPS, 1979 * TFLOPS, 2.4e-6, 160e9),
    # CloudMatrix-Infer's fused MoE operators on 910C (Zuo et al., arXiv:2506.12708, operator
    # evaluation, 128 tokens per rank, hidden 7,168, top-8, INT8 dispatch / BF16 combine):
    # dispatch 116 us at EP8, 152 us at EP256 (54 GB/s per rank there); combine 118 us at EP8
    # (131 GB/s per rank). Dispatch at 54 GB/s and combine at 131 GB/s; the hop latency solved
    # from the EP256 dispatch figure (152 us - 7.34 MB / 54 GB/s = 17 us over 2 log2(256) hops).
    "ascend-910c": Fabric(
        392e9,
        50e9,
        None,
        1504 * TFLOPS,
        scaleup_domain=384,
        a2a_dispatch_bytes_per_s=2 * 54e9,
        a2a_combine_bytes_per_s=2 * 131e9,
        a2a_hop_s=1.06e-6,
    ),
    "ascend-950pr": Fabric(2000e9, 50e9, 1000 * TFLOPS, 1000 * TFLOPS, scaleup_domain=384),
    "ascend-950dt": Fabric(2000e9, 50e9, 1000 * TFLOPS, 1000 * TFLOPS, scaleup_domain=384),
}

DTYPE_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0}


def fabric(hw: HardwareSpec) -> Fabric:
    """Fabric figures for ``hw``; unknown (operator-added) hardware gets conservative defaults."""
    return FABRIC.get(hw.id, Fabric(100e9, 25e9, None, None))


def peak_for(hw: HardwareSpec, dtype: str) -> float:
    """Dense matmul rate for weights of ``dtype`` (falls back to BF16 math when not native)."""
    f = fabric(hw)
    if dtype == "fp8" and f.fp8_flops:
        return f.fp8_flops
    if dtype == "int8" and f.int8_ops:
        return f.int8_ops
    return hw.peak_flops
