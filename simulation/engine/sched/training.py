"""Training-job table and the job operations the schedulers use.

Preemption and failures lose the work since the last checkpoint (``job_done`` rolls back to
``job_ckpt``). Elastic resizes keep their progress (elastic frameworks restart from an in-memory
snapshot) but pay ``resize_overhead_s`` of no progress. Checkpoint writing time is not charged:
an approximation (asynchronous checkpointing makes it small).
"""

from __future__ import annotations

import numpy as np

from ..perf.training import communication_factor, effective_mfu, tokens_per_second
from ..scenario.types import Topology, TrainingJob
from ..state import EngineState
from ..topology import TopologyIndex


class JobTable:
    """Static per-job arrays derived from the scenario."""

    def __init__(self, jobs: list[TrainingJob], topo: Topology, hbm_bytes: float) -> None:
        self.n = len(jobs)
        self.names = [j.name for j in jobs]
        self.tenants = [j.tenant for j in jobs]
        f = np.array
        self.params = f([j.params for j in jobs], dtype=float)
        self.seq_len = f([j.seq_len for j in jobs], dtype=float)
        self.base_mfu = f([j.base_mfu for j in jobs], dtype=float)
        self.comm_share = f([j.comm_share for j in jobs], dtype=float)
        self.min_cards = f([j.min_cards for j in jobs], dtype=np.int64)
        self.max_cards = f([j.max_cards for j in jobs], dtype=np.int64)
        self.priority = f([j.priority for j in jobs], dtype=np.int64)
        self.ckpt_interval = f([j.checkpoint_interval_s for j in jobs], dtype=float)
        self.work = f([j.work_samples for j in jobs], dtype=float)
        self.submit = f([j.submit_time_s for j in jobs], dtype=float)
        cpn = topo.cards_per_node
        # Gangs of whole nodes when the job is at least a node wide (TP stays inside a node).
        self.granule = np.where(self.min_cards >= cpn, cpn, 1)
        # Mixed-precision Adam: ~16 B/parameter of state, sharded over the job's cards,
        # plus activations (assumed 20% of HBM with recomputation).
        self.state_bytes = 16.0 * self.params
        self.activation_bytes = 0.2 * hbm_bytes
        for j in jobs:
            if 16.0 * j.params / j.min_cards + 0.2 * hbm_bytes > 0.95 * hbm_bytes:
                raise ValueError(
                    f"TrainingJob {j.name!r}: field 'min_cards' too small: training state "
                    f"({16 * j.params / 2**30:.0f} GiB) does not fit on {j.min_cards} cards"
                )
        # Queue order: priority high first, then submit time, then index (deterministic).
        self.order = np.lexsort((np.arange(self.n), self.submit, -self.priority))


def set_job_cards(st: EngineState, idx: TopologyIndex, j: int, cards: np.ndarray) -> None:
    """Record a job's cards and its rack/supernode spread (used by the comm model)."""
    st.job_cards[j] = cards
    if cards.size:
        st.job_racks[j] = np.unique(idx.card_rack[cards]).size
        st.job_sns[j] = np.unique(idx.card_sn[cards]).size


def release_job(st: EngineState, j: int) -> np.ndarray:
    """Free all cards of job ``j`` and return them."""
    cards = st.job_cards[j]
    st.owner[cards] = -1
    st.job_cards[j] = np.empty(0, np.int64)
    return cards


def preempt_job(st: EngineState, j: int, restart_overhead: float, count_as: str) -> np.ndarray:
    """Stop a running job: roll back to its checkpoint and queue it again."""
    lost = st.job_done[j] - st.job_ckpt[j]
    st.counters["lost_samples"] += float(lost)
    st.job_done[j] = st.job_ckpt[j]
    st.job_state[j] = 1
    st.job_queued_since[j] = st.t
    st.job_overhead[j] = restart_overhead
    st.counters[count_as] += 1
    if count_as == "preemptions":
        st.job_preemptions[j] += 1
    return release_job(st, j)


def shrink_job(st: EngineState, idx: TopologyIndex, j: int, keep: int, overhead: float):
    """Elastic shrink to ``keep`` cards; returns the released cards."""
    cards = st.job_cards[j]
    out = cards[keep:]
    st.owner[out] = -1
    set_job_cards(st, idx, j, cards[:keep])
    st.job_overhead[j] = max(st.job_overhead[j], overhead)
    st.counters["resizes"] += 1
    return out


def progress(
    st: EngineState,
    jt: JobTable,
    topo: Topology,
    peak_flops: float,
    dt: float,
    link_penalty: np.ndarray | None,
) -> dict[str, np.ndarray]:
    """Advance running jobs by ``dt``: samples, checkpoints, completions. Returns per-job rates."""
    running = st.job_state == 2
    cards = np.array([c.size for c in st.job_cards], dtype=float) if jt.n else np.zeros(0)
    # base comm_share is measured on a 1:1 rack; an oversubscribed rack scales all of it.
    factor = topo.in_rack_convergence * communication_factor(
        st.job_racks, st.job_sns, topo.inter_rack_convergence, topo.inter_supernode_convergence
    )
    if link_penalty is not None:
        factor = factor * link_penalty
    mfu, comm = effective_mfu(jt.base_mfu, jt.comm_share, factor)
    tok = tokens_per_second(mfu, cards, peak_flops, jt.params)
    useful = np.where(running, np.clip(dt - st.job_overhead, 0.0, dt), 0.0)
    st.job_overhead = np.where(running, np.maximum(st.job_overhead - dt, 0.0), st.job_overhead)
    samples = tok / jt.seq_len * useful
    st.job_done += samples
    due = running & (st.t - st.job_last_ckpt_t >= jt.ckpt_interval)
    st.job_ckpt = np.where(due, st.job_done, st.job_ckpt)
    st.job_last_ckpt_t = np.where(due, st.t, st.job_last_ckpt_t)
    finished = running & (st.job_done >= jt.work)
    for j in np.flatnonzero(finished):
        st.job_state[j] = 3
        st.counters["completed_jobs"] += 1
        release_job(st, int(j))
    rate = np.where(running, tok / jt.seq_len * useful / dt, 0.0)
    return {
        "samples_per_s": rate,
        "mfu": np.where(running, mfu, 0.0),
        "comm_share": np.where(running, comm, 0.0),
        "cards": np.where(running, cards, 0.0),
        "busy": np.where(running, useful / dt, 0.0),
    }
