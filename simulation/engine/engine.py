"""The digital-twin engine: one object owning the clock, the RNGs and all mutable state.

Usage::

    eng = Engine(scenario)
    eng.step()                  # advance one step (scenario.step_seconds, default 60 s)
    eng.run_until(3600.0)       # advance whole steps until the clock reaches t
    snap = eng.snapshot()       # metrics of the last step (NumPy arrays per card)
    blob = eng.save_state()     # compact versioned bytes
    eng2 = Engine.load_state(blob)   # continues bit-identically

No global random state is touched: the engine owns a ``random.Random`` and a NumPy
``Generator`` seeded from the scenario.
"""

from __future__ import annotations

import math

import numpy as np

from . import state as state_mod
from .catalog import get_hardware
from .faults import link_effects, step_faults
from .memory.accounting import memory_step
from .memory.pool import PrefixModel, new_caches
from .scenario.types import Scenario
from .sched.inference import ServiceTable
from .sched.policy import features_of, schedule
from .sched.training import JobTable, progress
from .snapshot import Snapshot, build_snapshot
from .state import EngineState
from .summary import Summary
from .topology import TopologyIndex


class Engine:
    """Time-stepped simulator of one cluster under one scheduling policy."""

    def __init__(self, scenario: Scenario, _state: EngineState | None = None) -> None:
        self.scenario = scenario
        topo = scenario.topology
        self.hw = get_hardware(topo.hardware)
        self.idx = TopologyIndex(topo)
        self.svc = ServiceTable(scenario.services, self.hw, scenario.policy)
        self.features = features_of(scenario.policy)
        self.jobs = JobTable(scenario.training_jobs, topo, self.hw.hbm_bytes, self.hw)
        self.prefix = PrefixModel(self.svc.prompt, self.svc.prefix_share)
        self.names = {n: ("job", i) for i, n in enumerate(self.jobs.names)}
        self.names.update({n: ("service", i) for i, n in enumerate(self.svc.names)})
        curve = scenario.demand_curve
        self._curve = None
        if curve is not None:
            c = np.asarray(curve, dtype=float)
            self._curve = c / c.mean() if c.mean() > 0 else c
        self.infer_pool = self._split_pool()
        if _state is None:
            st = EngineState(topo.cards, self.idx.n_links, self.jobs.n, self.svc.n, scenario.seed)
            st.temperature[:] = scenario.inlet_temp_celsius + 5.0
            st.caches, st.dram_caches = new_caches(
                scenario.policy.kv_eviction,
                self.svc.n,
                scenario.policy.kv_offload and self.features.pooled_memory,
            )
            st.summary = Summary.empty()
            _state = st
        self.state = _state
        self.last_latency: dict[str, np.ndarray] | None = _state.last_latency
        self._snapshot: Snapshot | None = None

    # -- setup ------------------------------------------------------------------------
    def _split_pool(self) -> np.ndarray:
        """Boolean mask of the inference partition (used by ``split`` only)."""
        n = self.idx.n_cards
        pol = self.scenario.policy
        if pol.inference_pool_fraction is not None:
            size = int(round(pol.inference_pool_fraction * n))
        else:
            # Size for the peak of each service's day (or replayed curve) at full traffic share.
            peak = (
                1.0 + self.svc.amplitude
                if self._curve is None
                else np.full(self.svc.n, self._curve.max())
            )
            lam = self.svc.mean_rate * peak
            reps = self.svc.target_replicas(
                lam, np.zeros(self.svc.n), np.full(self.svc.n, pol.target_utilization)
            )
            size = int((reps * self.svc.tp).sum())
        size = min(size, n)
        mask = np.zeros(n, dtype=bool)
        mask[:size] = True
        return mask

    # -- clock ------------------------------------------------------------------------
    @property
    def t(self) -> float:
        """Simulated seconds since the scenario start."""
        return self.state.t

    def hour_of_day(self, t: float | None = None) -> float:
        """Wall-clock hour of day at simulated time ``t`` (defaults to now)."""
        t = self.state.t if t is None else t
        return (self.scenario.start_hour + t / 3600.0) % 24.0

    def demand(self, t: float) -> np.ndarray:
        """Request rate per service (1/s) at time ``t``, before noise, after traffic shares."""
        if self._curve is None:
            mult = self.svc.diurnal(self.hour_of_day(t))
        else:
            i = int(t // self.scenario.demand_curve_step_s)
            if self.scenario.replay is not None and i >= self._curve.size:
                mult = np.zeros(self.svc.n)  # a replayed trace is not wrapped around
            else:
                mult = np.full(self.svc.n, self._curve[i % self._curve.size])
        return self.svc.mean_rate * mult * self.state.svc_share

    # -- hooks for the portal -----------------------------------------------------------
    def set_traffic_share(self, workload_name: str, share: float) -> None:
        """Route ``share`` (0..1) of a workload's demand to this cluster (gray migration).

        For an inference service the request rate is scaled. A training job cannot be split,
        so a share of 0 suspends it (checkpointed, off the cluster) and any share > 0 admits it.
        """
        if workload_name not in self.names:
            raise ValueError(f"workload_name: unknown workload {workload_name!r}")
        if not (isinstance(share, (int, float)) and 0.0 <= share <= 1.0):
            raise ValueError(f"share: must be a number in [0, 1] (got {share!r})")
        kind, i = self.names[workload_name]
        if kind == "service":
            self.state.svc_share[i] = float(share)
        else:
            self.state.job_active[i] = share > 0

    def traffic_share(self, workload_name: str) -> float:
        """Current share of a workload (1.0/0.0 for training jobs)."""
        if workload_name not in self.names:
            raise ValueError(f"workload_name: unknown workload {workload_name!r}")
        kind, i = self.names[workload_name]
        if kind == "service":
            return float(self.state.svc_share[i])
        return 1.0 if self.state.job_active[i] else 0.0

    def step_memory_pool(self, seconds: float) -> dict[str, np.ndarray]:
        """Advance only the memory pool (KV cache / prefix cache dynamics) by ``seconds``.

        Placement, clock and workloads are unchanged; returns the per-supernode pool
        aggregates (bytes, hit/lookup counts, evictions, failures) for that interval.
        """
        if not seconds > 0:
            raise ValueError(f"seconds: must be > 0 (got {seconds!r})")
        return memory_step(self, float(seconds))["agg"]

    def topology(self) -> dict[str, list[dict]]:
        """Inventory listing: supernodes, racks, nodes, cards (with hardware id) and links."""
        return self.idx.listing()

    def workloads(self) -> list[dict]:
        """Workload listing: name, kind, tenant and (for services) model and criticality."""
        out = [
            {"name": n, "kind": "training", "tenant": t}
            for n, t in zip(self.jobs.names, self.jobs.tenants, strict=True)
        ]
        for i, s in enumerate(self.scenario.services):
            out.append(
                {
                    "name": s.name,
                    "kind": "inference",
                    "tenant": s.tenant,
                    "model": s.model,
                    "criticality": s.criticality,
                    "tp": s.tp,
                    "traffic_share": float(self.state.svc_share[i]),
                }
            )
        return out

    # -- stepping ---------------------------------------------------------------------
    def step(self) -> Snapshot:
        """Advance one step of ``scenario.step_seconds``; return the step's snapshot."""
        st = self.state
        dt = self.scenario.step_seconds
        t0 = st.t
        noise = np.exp(st.np_rng.normal(0.0, 0.05, self.svc.n))  # short-term burstiness
        if self.scenario.replay is not None:  # trace replay: exact demand and lengths
            noise = np.ones(self.svc.n)
            self._replay_lengths(t0)
        lam = self.demand(t0 + dt / 2) * noise
        backlog = self._backlog()
        self.svc.pending = backlog  # autoscaling sees the queue left by the previous step
        schedule(self, lam, self.hour_of_day(t0))
        st.t = t0 + dt
        st.steps += 1
        step_faults(self, dt)
        replicas = np.array([c.size for c in st.svc_cards], dtype=float) / self.svc.tp
        # New replicas load weights during the step: from the pooled weight cache or storage.
        f = self.features
        bw = (
            f.weight_cache_bandwidth_bytes_per_s
            if f.weight_cache
            else f.storage_bandwidth_bytes_per_s
        )
        load_s = self.svc.weights_per_card / bw
        ready = np.clip(1.0 - load_s / dt, 0.0, 1.0)
        eff_rep = np.maximum(replicas - st.svc_new_replicas * (1.0 - ready), 0.0)
        lat = self.svc.latency(lam, eff_rep, st.svc_hit, dt, backlog=backlog)
        self._account_serving(lat, lam, dt)
        self.last_latency = lat
        st.last_latency = lat
        penalty = link_effects(self, dt)
        train = progress(st, self.jobs, self.scenario.topology, self.hw.peak_flops, dt, penalty)
        mem = memory_step(self, dt, force_prefix=False)
        snap = build_snapshot(self, lat, train, mem, dt)
        Summary.update(st.summary, snap, lat, train, self)
        self._snapshot = snap
        return snap

    def _replay_lengths(self, t: float) -> None:
        """Set this step's mean prompt/output lengths from the replayed trace."""
        rp = self.scenario.replay
        i = min(int(t // self.scenario.step_seconds), len(rp["prompt_tokens"]) - 1)
        self.svc.set_lengths(rp["prompt_tokens"][i], rp["output_tokens"][i])

    def _backlog(self) -> np.ndarray:
        """Requests queued at the end of the previous step (carried forward per service)."""
        b = getattr(self.state, "svc_backlog", None)
        if b is None or len(b) != self.svc.n:
            b = np.zeros(self.svc.n)
        return b

    def _account_serving(self, lat: dict, lam: np.ndarray, dt: float) -> None:
        """Carry the backlog and count requests and timeouts (serving counters)."""
        st = self.state
        st.svc_backlog = lat["backlog"]
        st.counters["inference_requests"] = st.counters.get("inference_requests", 0.0) + float(
            (lam * dt).sum()
        )
        st.counters["inference_timeouts"] = st.counters.get("inference_timeouts", 0.0) + float(
            lat["timeouts"].sum()
        )
        to = getattr(st, "svc_timeouts_total", None)
        st.svc_timeouts_total = (to if to is not None else np.zeros(self.svc.n)) + lat["timeouts"]

    def run_until(self, t: float, progress_cb=None) -> Snapshot | None:
        """Step until the clock reaches ``t`` (whole steps); return the last snapshot."""
        snap = self._snapshot
        dt = self.scenario.step_seconds
        total = max(math.ceil((t - self.state.t) / dt - 1e-9), 0)
        for i in range(total):
            snap = self.step()
            if progress_cb is not None:
                progress_cb(i + 1, total)
        return snap

    def snapshot(self) -> Snapshot | None:
        """The last step's snapshot (``None`` before the first step)."""
        return self._snapshot

    def summary(self) -> dict[str, float]:
        """Run-level figures (means over steps, request-weighted latencies, counters)."""
        return Summary.finish(self.state.summary, self)

    # -- persistence ------------------------------------------------------------------
    def save_state(self) -> bytes:
        """Versioned, compressed bytes of scenario + state (see :mod:`.state`)."""
        return state_mod.dump(self.scenario.to_dict(), self.state)

    @classmethod
    def load_state(cls, data: bytes) -> Engine:
        """Rebuild an engine from :meth:`save_state` bytes; continues bit-identically."""
        scen, st = state_mod.load(data)
        return cls(Scenario.from_dict(scen), _state=st)
