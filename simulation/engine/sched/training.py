"""Training-job table: the static per-job arrays and the throughput model per placement.

Throughput is an output of :mod:`..perf.train_model` (issue 14): each job gets a model shape
(its catalog model, or a standard dense shape for its parameter count), the layout a scheduler
would pick (:func:`..perf.train_model.auto_layout`), its global batch, and the fabric of the
scenario topology; every step a running job's MFU, communication and bubble shares follow its
current card count and its rack / supernode spread (cached per distinct placement).
``TrainingJob.base_mfu`` and ``comm_share`` are no longer used (kept so old scenarios load).

The job lifecycle (placement, preemption, progress, checkpoints) is the state of
:class:`..mechanisms.jobs.Jobs`.
"""

from __future__ import annotations

import numpy as np

from ..catalog import MODELS, HardwareSpec
from ..perf.train_model import Fabric, auto_layout, interleaved_vpp, shape_of, step_time
from ..scenario.types import Topology, TrainingJob


class JobTable:
    """Static per-job arrays derived from the scenario."""

    # Rebuilt, not saved: ``_perf`` memoises :meth:`perf`, a pure function of the tables.
    MEMO_FIELDS = ("_perf",)

    def __init__(
        self,
        jobs: list[TrainingJob],
        topo: Topology,
        hbm_bytes: float,
        hw: HardwareSpec | None = None,
    ) -> None:
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
        self.hw = hw
        self.topo = topo
        self.shapes = [shape_of(MODELS.get(j.model) if j.model else None, j.params) for j in jobs]
        self.batch_tokens = f([j.seq_len * j.global_batch for j in jobs], dtype=float)
        self.flops_per_token = f(
            [
                6.0 * sh.active_params + 12.0 * sh.layers * sh.attention_width * j.seq_len
                for sh, j in zip(self.shapes, jobs, strict=True)
            ],
            dtype=float,
        )
        self.flops_per_sample = self.flops_per_token * self.seq_len
        self.fabric = Fabric.from_topology(topo, hw.id) if hw is not None else None
        self._perf: dict[tuple, tuple[float, float, float, float]] = {}

    def perf(self, j: int, cards: int, racks: int, sns: int, penalty: float = 1.0):
        """(samples/s, MFU over the job's cards, comm share, bubble share) of job ``j``."""
        if cards <= 0 or self.hw is None:
            return 0.0, 0.0, 0.0, 0.0
        key = (j, cards, racks, sns, round(penalty, 3))
        hit = self._perf.get(key)
        if hit is not None:
            return hit
        sh = self.shapes[j]
        seq = int(self.seq_len[j])
        tp, pp = auto_layout(sh, self.hw, int(self.min_cards[j]), self.topo.cards_per_node)
        mp = tp * pp
        seqs = max(self.batch_tokens[j] / seq, 1.0)
        dp = max(min(cards // mp, int(seqs)), 1)  # cards beyond the batch's DP width idle
        used = dp * mp
        if used > cards:  # fewer cards than one model replica: cannot run
            res = (0.0, 0.0, 0.0, 0.0)
        else:
            r = step_time(
                sh,
                self.hw,
                used,
                tp,
                pp,
                seq_len=seq,
                global_batch_tokens=dp * int(seqs // dp) * seq,
                vpp=interleaved_vpp(sh.layers, pp) if pp > 1 else 1,
                fabric=self.fabric,
                link_penalty=penalty,
                spread=(racks, sns, cards),
            )
            tok = r["tokens_per_s"]
            mfu = tok * self.flops_per_token[j] / (cards * self.hw.peak_flops)
            res = (tok / seq, mfu, r["comm_share"], r["bubble_share"])
        if len(self._perf) > 200_000:
            self._perf.clear()
        self._perf[key] = res
        return res
