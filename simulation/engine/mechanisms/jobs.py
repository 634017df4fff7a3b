"""Training jobs: submission, placement, resizes, preemption, progress and checkpoints.

Job states: 0 not yet submitted, 1 queued, 2 running, 3 done. Preemption and failures lose the
work since the last checkpoint (``done`` rolls back to ``ckpt``) and pay a restart; elastic
resizes keep their progress but pay ``resize_overhead_s`` of no progress. Checkpoint writing
time is not charged (asynchronous checkpointing makes it small). Throughput per job comes from
:meth:`..sched.training.JobTable.perf` (issue 14), for its current cards and spread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .base import Mechanism
from .cards import CardPool

if TYPE_CHECKING:  # annotations only
    from ..sched.training import JobTable
    from ..topology import TopologyIndex

QUEUED, RUNNING, DONE = 1, 2, 3


class Jobs(Mechanism):
    """Per-job lifecycle arrays; the only writer of a job's cards, progress and checkpoints."""

    STATE = (
        "state",
        "done",
        "ckpt",
        "last_ckpt_t",
        "overhead",
        "queued_since",
        "wait_total",
        "preempted",
        "racks",
        "sns",
        "active",
        "cards",
    )
    COUNTERS = {
        "preemptions": 0,
        "resizes": 0,
        "drains": 0,
        "lost_flops": 0.0,
        "restarts": 0,
        "lost_samples": 0.0,
        "completed_jobs": 0,
    }

    def __init__(self, n_jobs: int) -> None:
        self.state = np.zeros(n_jobs, dtype=np.int8)
        self.done = np.zeros(n_jobs)
        self.ckpt = np.zeros(n_jobs)
        self.last_ckpt_t = np.zeros(n_jobs)
        self.overhead = np.zeros(n_jobs)  # seconds of restart still to pay
        self.queued_since = np.zeros(n_jobs)
        self.wait_total = np.zeros(n_jobs)
        self.preempted = np.zeros(n_jobs, dtype=np.int64)
        self.racks = np.ones(n_jobs, dtype=np.int64)
        self.sns = np.ones(n_jobs, dtype=np.int64)
        self.active = np.ones(n_jobs, dtype=bool)  # traffic share > 0
        self.cards: list[np.ndarray] = [np.empty(0, np.int64) for _ in range(n_jobs)]
        self._new_counters()

    def bind(self, table: JobTable, idx: TopologyIndex, pool: CardPool) -> None:
        """Bind the static job table, the topology and the card pool the jobs draw from."""
        self.table, self.idx, self.pool = table, idx, pool

    def fields(self) -> dict[str, Any]:
        """The saved fields, with ``cards`` as the running jobs' cards only.

        A day's demand has thousands of jobs (146k at 102,400 cards) and only the running
        ones hold cards, so the list is saved as ``{"held": job indices, "sizes", "flat"}``
        (three arrays) instead of one array per job: walking the whole list cost more than an
        engine step. If the pool says some other job holds cards (a broken invariant), every
        non-empty entry is found the slow way, so nothing is lost either way.
        """
        out = super().fields()
        held = np.flatnonzero(self.state == RUNNING)
        owner = self.pool.owner
        by_jobs = int(np.count_nonzero((owner >= 0) & (owner < self.n)))
        lists = [self.cards[j] for j in held.tolist()]
        if sum(a.size for a in lists) != by_jobs:
            held = np.flatnonzero(np.fromiter(map(len, self.cards), np.int64, self.n))
            lists = [self.cards[j] for j in held.tolist()]
        dtypes = {a.dtype for a in lists} or {np.dtype(np.int64)}
        if len(dtypes) > 1:
            return out  # mixed dtypes (never written by this engine): the plain list
        out["cards"] = {
            "held": held,
            "sizes": np.fromiter(map(len, lists), np.int64, len(lists)),
            "flat": np.concatenate(lists) if lists else np.empty(0, dtypes.pop()),
        }
        return out

    @classmethod
    def from_fields(cls, fields: dict[str, Any]) -> Jobs:
        """Rebuild from :meth:`fields` (or a format 1-3 list of per-job card arrays)."""
        cards = fields.get("cards")
        if isinstance(cards, dict):
            empty = np.empty(0, cards["flat"].dtype)  # shared: an empty array takes no write
            full = [empty] * int(fields["state"].size)
            if cards["held"].size:
                pieces = np.split(cards["flat"], np.cumsum(cards["sizes"])[:-1])
                for j, piece in zip(cards["held"].tolist(), pieces, strict=True):
                    full[j] = piece
            fields = {**fields, "cards": full}
        return super().from_fields(fields)

    @property
    def n(self) -> int:
        """Number of jobs."""
        return int(self.state.size)

    def card_counts(self) -> np.ndarray:
        """Cards held per job (float).

        Only running jobs hold cards (an invariant :meth:`check` enforces), so only they are
        visited: a day's demand has thousands of finished and future jobs (step cost).
        """
        out = np.zeros(self.n)
        for j in np.flatnonzero(self.state == RUNNING):
            out[j] = self.cards[j].size
        return out

    # -- transitions ------------------------------------------------------------------
    def _set_cards(self, j: int, cards: np.ndarray) -> None:
        """Record a job's cards and its rack/supernode spread (used by the comm model)."""
        self.cards[j] = cards
        if cards.size:
            self.racks[j] = np.unique(self.idx.card_rack[cards]).size
            self.sns[j] = np.unique(self.idx.card_sn[cards]).size

    def submit_arrivals(self, t: float) -> None:
        """Queue every job whose submit time has come."""
        arrived = (self.state == 0) & (self.table.submit <= t)
        self.queued_since = np.where(arrived, self.table.submit, self.queued_since)
        self.state[arrived] = QUEUED

    def set_active(self, j: int, active: bool) -> None:
        """Admit (share > 0) or suspend (share 0) job ``j``; the scheduler acts on it."""
        self.active[j] = active

    def start(self, j: int, cards: np.ndarray, t: float) -> None:
        """Run queued job ``j`` on free ``cards``."""
        if self.state[j] != QUEUED:
            self.fail(f"start: job {j} is not queued (state {int(self.state[j])})")
        self.pool.allocate(cards, j)
        self._set_cards(j, cards)
        self.state[j] = RUNNING
        self.wait_total[j] += t - self.queued_since[j]

    def grow(self, j: int, cards: np.ndarray, overhead: float) -> None:
        """Elastic growth of running job ``j`` onto free ``cards`` (pays a resize)."""
        self.pool.allocate(cards, j)
        self._set_cards(j, np.concatenate([self.cards[j], cards]))
        self.overhead[j] = max(self.overhead[j], overhead)
        self.counters["resizes"] += 1

    def shrink(self, j: int, keep: int, overhead: float) -> np.ndarray:
        """Elastic shrink to ``keep`` cards; returns the released cards."""
        cards = self.cards[j]
        if keep < self.table.min_cards[j]:
            self.fail(f"shrink: job {j} below its minimum ({keep} < {self.table.min_cards[j]})")
        out = cards[keep:]
        self.pool.release(out, j)
        self._set_cards(j, cards[:keep])
        self.overhead[j] = max(self.overhead[j], overhead)
        self.counters["resizes"] += 1
        return out

    def release(self, j: int) -> np.ndarray:
        """Free all cards of job ``j`` and return them."""
        cards = self.cards[j]
        self.pool.release(cards, j)
        self.cards[j] = np.empty(0, np.int64)
        return cards

    def preempt(self, j: int, t: float, restart_overhead: float, count_as: str) -> np.ndarray:
        """Stop running job ``j``: roll back to its checkpoint, queue it again, free its cards."""
        lost = self.done[j] - self.ckpt[j]
        self.counters["lost_samples"] += float(lost)
        self.counters["lost_flops"] += float(lost * self.table.flops_per_sample[j])
        self.done[j] = self.ckpt[j]
        self.state[j] = QUEUED
        self.queued_since[j] = t
        self.overhead[j] = restart_overhead
        self.counters[count_as] = self.counters.get(count_as, 0) + 1
        if count_as == "preemptions":
            self.preempted[j] += 1
        return self.release(j)

    def drain(self, j: int, t: float, restart_overhead: float) -> np.ndarray:
        """Scheduled stop: checkpoint first (nothing lost), then queue again."""
        self.ckpt[j] = self.done[j]
        self.last_ckpt_t[j] = t
        return self.preempt(j, t, restart_overhead, "drains")

    def add_overhead(self, seconds: np.ndarray) -> None:
        """Add per-job stall time (e.g. link reroutes) to the restart time still to pay."""
        self.overhead = self.overhead + seconds

    # -- stepping ---------------------------------------------------------------------
    def step(self, dt: float, t: float, link_penalty: np.ndarray | None) -> dict[str, np.ndarray]:
        """Advance running jobs by ``dt`` (ending at ``t``): samples, checkpoints, completions.

        Returns the per-job rates of the step (samples/s, MFU, comm/bubble shares, cards, busy).
        """
        jt = self.table
        running = self.state == RUNNING
        cards = self.card_counts()
        rate = np.zeros(jt.n)
        mfu = np.zeros(jt.n)
        comm = np.zeros(jt.n)
        bubble = np.zeros(jt.n)
        for j in np.flatnonzero(running):
            pen = 1.0 if link_penalty is None else float(link_penalty[j])
            rate[j], mfu[j], comm[j], bubble[j] = jt.perf(
                int(j), int(cards[j]), int(self.racks[j]), int(self.sns[j]), pen
            )
        useful = np.where(running, np.clip(dt - self.overhead, 0.0, dt), 0.0)
        self.overhead = np.where(running, np.maximum(self.overhead - dt, 0.0), self.overhead)
        samples = rate * useful
        self.done += samples
        due = running & (t - self.last_ckpt_t >= jt.ckpt_interval)
        self.ckpt = np.where(due, self.done, self.ckpt)
        self.last_ckpt_t = np.where(due, t, self.last_ckpt_t)
        finished = running & (self.done >= jt.work)
        for j in np.flatnonzero(finished):
            self.state[j] = DONE
            self.counters["completed_jobs"] += 1
            self.release(int(j))
        return {
            "samples_per_s": np.where(running, rate * useful / dt, 0.0),
            "mfu": np.where(running, mfu, 0.0),
            "comm_share": np.where(running, comm, 0.0),
            "bubble_share": np.where(running, bubble, 0.0),
            "cards": np.where(running, cards, 0.0),
            "busy": np.where(running, useful / dt, 0.0),
        }

    def check(self) -> None:
        """States in 0..3; only running jobs hold cards, exactly the cards the pool gives them;
        checkpoint <= progress; unfinished progress <= work; no negative times."""
        if not np.isin(self.state, (0, QUEUED, RUNNING, DONE)).all():
            self.fail("a job state is outside 0..3")
        owner = self.pool.owner
        held = np.bincount(owner[owner >= 0], minlength=self.n + 1)[: self.n] if self.n else []
        for j in range(self.n):
            size = self.cards[j].size
            if (size > 0) != (self.state[j] == RUNNING):
                self.fail(f"job {j} holds {size} cards in state {int(self.state[j])}")
            if size != held[j] or (size and (owner[self.cards[j]] != j).any()):
                self.fail(f"job {j}: its cards and the card pool disagree")
        if (self.ckpt > self.done + 1e-6 * np.maximum(self.done, 1.0)).any():
            self.fail("a checkpoint is ahead of its job's progress")
        if (self.done[self.state < DONE] > self.table.work[self.state < DONE]).any():
            self.fail("an unfinished job has done more than its work")
        if (self.overhead < 0).any() or (self.wait_total < 0).any():
            self.fail("negative overhead or waiting time")
