"""Training throughput: ``tokens/s = MFU x cards x peak / (6 N)`` with a placement-aware MFU.

A job's ``base_mfu`` is what it reaches when all its cards sit in one rack, where communication
takes ``comm_share`` of step time. Spanning racks pushes part of the collective traffic through
the inter-rack tier (``inter_rack_convergence``:1 oversubscribed), and spanning supernodes through
the slower inter-supernode tier. We scale the communication time by

    1 + (r_rack - 1) * (1 - 1/racks) + (r_sn - 1) * (1 - 1/supernodes)

(the fraction of ring/hierarchical all-reduce traffic that crosses a boundary grows as
``1 - 1/k`` for ``k`` groups). Compute time is unchanged, so MFU falls as the share grows.
This is a first-order model; it ignores overlap of communication with compute beyond what the
base share already encodes.
"""

from __future__ import annotations

import numpy as np


def communication_factor(
    racks: np.ndarray,
    supernodes: np.ndarray,
    inter_rack_convergence: float,
    inter_supernode_convergence: float,
) -> np.ndarray:
    """Multiplier on communication time caused by spreading a job over racks/supernodes."""
    racks = np.maximum(racks, 1)
    supernodes = np.maximum(supernodes, 1)
    return (
        1.0
        + (inter_rack_convergence - 1.0) * (1.0 - 1.0 / racks)
        + (inter_supernode_convergence - 1.0) * (1.0 - 1.0 / supernodes)
    )


def effective_mfu(
    base_mfu: np.ndarray, comm_share: np.ndarray, factor: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Return (MFU, communication share of step time) after placement effects."""
    base_ratio = comm_share / (1.0 - comm_share)  # comm time per unit compute time, in-rack
    ratio = base_ratio * factor
    mfu = base_mfu * (1.0 + base_ratio) / (1.0 + ratio)
    return mfu, ratio / (1.0 + ratio)


def tokens_per_second(mfu: np.ndarray, cards: np.ndarray, peak_flops: float, params: np.ndarray):
    """Training tokens/s = MFU x cards x peak / (6 N) (6 FLOPs per parameter per token)."""
    return mfu * cards * peak_flops / (6.0 * params)
