"""The static side of one scenario: topology index, job and service tables, hardware.

Built from the scenario when an engine is made or loaded and never saved: everything here is
a pure function of the scenario. The demand curve lives here too (time -> request rate).
"""

from __future__ import annotations

import copy

import numpy as np

from .catalog import get_hardware
from .memory.pool import PrefixModel
from .scenario.features import Features
from .scenario.types import Scenario
from .sched.inference import ServiceTable
from .sched.training import JobTable
from .topology import TopologyIndex


class World:
    """Static tables of a scenario, shared by the engine and its mechanisms."""

    def __init__(self, scenario: Scenario, features: Features) -> None:
        self.scenario = scenario
        topo = scenario.topology
        self.hw = get_hardware(topo.hardware)
        self.idx = TopologyIndex(topo)
        self.svc = ServiceTable(
            scenario.services, self.hw, scenario.policy, profile=scenario.perf_profile
        )
        self.features = features  # the policy's effective mechanisms (sched.policy)
        self.jobs = JobTable(scenario.training_jobs, topo, self.hw.hbm_bytes, self.hw)
        self.prefix = PrefixModel(self.svc.prompt, self.svc.prefix_share)
        self.names = {n: ("job", i) for i, n in enumerate(self.jobs.names)}
        self.names.update({n: ("service", i) for i, n in enumerate(self.svc.names)})
        curve = scenario.demand_curve
        self.curve = None
        if curve is not None:
            c = np.asarray(curve, dtype=float)
            self.curve = c / c.mean() if c.mean() > 0 else c
        self.infer_pool = self._split_pool()

    def fork(self) -> World:
        """A world for one more engine: the static tables shared, the per-step scratch its own.

        The engine writes a few service-table fields every step (the autoscaler's backlog
        hint ``svc.pending``; a trace replay's mean lengths ``prompt``/``output``/``context``,
        in place) and the table memoises per-dtype parts and decode tables as a run goes: the
        fork gets copies of those arrays as built from the scenario and empty memos, so
        engines sharing one world (``Engine.load_state`` reuses them) cannot see each other's
        step. Everything else here is read-only once built.
        """
        w = copy.copy(self)
        svc = copy.copy(self.svc)
        for memo in type(svc).MEMO_FIELDS:
            svc.__dict__.pop(memo, None)
        svc.pending = np.zeros_like(self.svc.pending)
        svc.prompt, svc.output = self.svc.prompt.copy(), self.svc.output.copy()
        svc.context = self.svc.context.copy()
        w.svc = svc
        return w

    def _split_pool(self) -> np.ndarray:
        """Boolean mask of the inference partition (used by ``split`` only)."""
        n = self.idx.n_cards
        pol = self.scenario.policy
        if pol.inference_pool_fraction is not None:
            size = int(round(pol.inference_pool_fraction * n))
        else:
            # Size for the peak of each service's day (or replayed curve) at full traffic share.
            # Capacity a tenant reserved for its peak counts too (it is held in the partition).
            peak = (
                self.svc.peak_multiplier
                if self.curve is None
                else np.full(self.svc.n, self.curve.max())
            )
            lam = self.svc.mean_rate * peak
            reps = self.svc.target_replicas(
                lam, np.zeros(self.svc.n), np.full(self.svc.n, pol.target_utilization)
            )
            reps = np.maximum(reps, self.svc.reserved)
            size = int((reps * self.svc.tp).sum())
        size = min(size, n)
        mask = np.zeros(n, dtype=bool)
        mask[:size] = True
        return mask

    def hour_of_day(self, t: float) -> float:
        """Wall-clock hour of day at simulated time ``t``."""
        return (self.scenario.start_hour + t / 3600.0) % 24.0

    def demand(self, t: float, share: np.ndarray) -> np.ndarray:
        """Request rate per service (1/s) at time ``t``, before noise, after traffic shares."""
        if self.curve is None:
            mult = self.svc.diurnal(self.hour_of_day(t))
        else:
            i = int(t // self.scenario.demand_curve_step_s)
            if self.scenario.replay is not None and i >= self.curve.size:
                mult = np.zeros(self.svc.n)  # a replayed trace is not wrapped around
            else:
                mult = np.full(self.svc.n, self.curve[i % self.curve.size])
        return self.svc.mean_rate * mult * share
