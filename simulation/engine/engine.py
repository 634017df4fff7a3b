"""The digital-twin engine: one object owning the clock, the RNGs and the mechanisms.

Usage::

    eng = Engine(scenario)
    eng.step()                  # advance one step (scenario.step_seconds, default 60 s)
    eng.run_until(3600.0)       # advance whole steps until the clock reaches t
    snap = eng.snapshot()       # metrics of the last step (NumPy arrays per card)
    eng.check()                 # every mechanism's invariants
    blob = eng.save_state()     # compact versioned bytes
    eng2 = Engine.load_state(blob)   # continues bit-identically

No global random state is touched: the engine owns a ``random.Random`` and a NumPy
``Generator`` seeded from the scenario. The state is split between mechanisms
(:mod:`.mechanisms`), each owning its slice; :meth:`Engine.step` composes them in a fixed
order and the snapshot is a pure read of the result.
"""

from __future__ import annotations

import copy
import json
import math
from collections import OrderedDict

import numpy as np

from . import state as state_mod
from .scenario.types import Scenario
from .sched.policy import features_of, schedule
from .serving.requests import RequestModel
from .snapshot import Snapshot, StepResult, build_snapshot, card_activity
from .state import EngineState
from .summary import Summary
from .world import World


class Engine:
    """Time-stepped simulator of one cluster under one scheduling policy."""

    def __init__(
        self,
        scenario: Scenario,
        _state: EngineState | None = None,
        _static: tuple[World, RequestModel] | None = None,
    ) -> None:
        self.scenario = scenario
        if _static is None:
            world = World(scenario, features_of(scenario.policy))
            _static = world, RequestModel(world)  # request-level latency sample (issue 25)
        self.world, self.requests = _static
        if _state is None:
            _state = EngineState.new(self.world)
            _state.summary = Summary.empty()
        _state.bind(self.world)
        self.state = _state
        self._result: StepResult | None = None
        self._snapshot: Snapshot | None = None
        self._scenario_json: str | None = None  # written once, reused by every save

    # -- static tables (the world) ----------------------------------------------------------
    @property
    def hw(self):
        """Hardware spec of the cluster's cards."""
        return self.world.hw

    @property
    def idx(self):
        """Topology index (card -> node/rack/supernode, entity keys)."""
        return self.world.idx

    @property
    def svc(self):
        """Static per-service table."""
        return self.world.svc

    @property
    def jobs(self):
        """Static per-job table."""
        return self.world.jobs

    @property
    def features(self):
        """The policy's effective mechanisms."""
        return self.world.features

    @property
    def prefix(self):
        """Static prefix-cache sampling model."""
        return self.world.prefix

    @property
    def names(self) -> dict[str, tuple[str, int]]:
        """Workload name -> (kind, index)."""
        return self.world.names

    @property
    def infer_pool(self) -> np.ndarray:
        """Boolean mask of the inference partition (``split``)."""
        return self.world.infer_pool

    @property
    def last_latency(self) -> dict[str, np.ndarray] | None:
        """The last step's serving figures (None before the first step)."""
        return self.state.services.last_latency

    @property
    def last_result(self) -> StepResult | None:
        """Everything the last step produced besides state (None before the first step)."""
        return self._result

    # -- clock ------------------------------------------------------------------------
    @property
    def t(self) -> float:
        """Simulated seconds since the scenario start."""
        return self.state.t

    def hour_of_day(self, t: float | None = None) -> float:
        """Wall-clock hour of day at simulated time ``t`` (defaults to now)."""
        return self.world.hour_of_day(self.state.t if t is None else t)

    def demand(self, t: float) -> np.ndarray:
        """Request rate per service (1/s) at time ``t``, before noise, after traffic shares."""
        return self.world.demand(t, self.state.services.share)

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
            self.state.services.set_share(i, float(share))
        else:
            self.state.jobs.set_active(i, share > 0)

    def traffic_share(self, workload_name: str) -> float:
        """Current share of a workload (1.0/0.0 for training jobs)."""
        if workload_name not in self.names:
            raise ValueError(f"workload_name: unknown workload {workload_name!r}")
        kind, i = self.names[workload_name]
        if kind == "service":
            return float(self.state.services.share[i])
        return 1.0 if self.state.jobs.active[i] else 0.0

    def step_memory_pool(self, seconds: float) -> dict[str, np.ndarray]:
        """Advance only the memory pool (KV cache / prefix cache dynamics) by ``seconds``.

        Placement, clock and workloads are unchanged; returns the per-supernode pool
        aggregates (bytes, hit/lookup counts, evictions, failures) for that interval.
        """
        if not seconds > 0:
            raise ValueError(f"seconds: must be > 0 (got {seconds!r})")
        return self.state.memory.step(float(seconds), self.state.np_rng)["agg"]

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
                    "traffic_share": float(self.state.services.share[i]),
                }
            )
        return out

    # -- stepping ---------------------------------------------------------------------
    def _announced(self, prev: dict[str, np.ndarray], lam: np.ndarray) -> np.ndarray:
        """The rate the autoscaler sizes on: the previous step's observed arrivals, except
        where the platform changed a service's traffic share since then. A share change is an
        announced load change, not a surprise: a rollout scales the target for the new weight
        before shifting it (Argo Rollouts' ``setCanaryScale``), so the observed rate is
        rescaled to the new share (a service that had none takes the model's rate)."""
        seen = prev["lam"]
        before = prev.get("share")
        share = self.state.services.share
        if before is None or before.shape != share.shape:
            return seen
        changed = share != before
        if not changed.any():
            return seen
        with np.errstate(divide="ignore", invalid="ignore"):
            rescaled = np.where(before > 0, seen * share / np.where(before > 0, before, 1), lam)
        return np.where(changed, rescaled, seen)

    def step(self) -> Snapshot:
        """Advance one step of ``scenario.step_seconds``; return the step's snapshot.

        Order (fixed, so runs are bit-identical for a seed): demand -> scheduling (services,
        jobs, card pool) -> clock -> faults -> serving latency -> link effects -> training
        progress -> memory pool -> thermals; then the snapshot reads the result.
        """
        st, w = self.state, self.world
        dt = self.scenario.step_seconds
        t0 = st.t
        noise = np.exp(st.np_rng.normal(0.0, 0.05, w.svc.n))  # short-term burstiness
        if self.scenario.replay is not None:  # trace replay: exact demand and lengths
            noise = np.ones(w.svc.n)
            self._replay_lengths(t0)
        lam = w.demand(t0 + dt / 2, st.services.share) * noise
        backlog = st.services.backlog
        w.svc.pending = backlog  # autoscaling sees the queue left by the previous step
        # The autoscaler reacts to what it has observed (an HPA's metric window: the previous
        # step's arrival rate and the backlog it left), never to the arrivals still to come: a
        # surge is served by the fleet of the step before it (issue 35 item 3; sizing on the
        # step's own arrivals let a replay's heavier, steeper load meet its replicas early).
        prev = st.services.last_latency
        seen = lam if prev is None else self._announced(prev, lam)
        schedule(w, st, seen, w.hour_of_day(t0))
        st.t = t0 + dt
        st.steps += 1
        st.faults.step(dt, st.t, st.np_rng)
        replicas = st.services.card_counts() / w.svc.tp
        # New replicas load weights during the step: from the pooled weight cache or storage.
        f = w.features
        bw = (
            f.weight_cache_bandwidth_bytes_per_s
            if f.weight_cache
            else f.storage_bandwidth_bytes_per_s
        )
        load_s = w.svc.weights_per_card / bw
        ready = np.clip(1.0 - load_s / dt, 0.0, 1.0)
        eff_rep = np.maximum(replicas - st.services.new_replicas * (1.0 - ready), 0.0)
        lat = w.svc.latency(lam, eff_rep, st.memory.hit, dt, backlog=backlog)
        self.requests.apply(w, st, lat, lam, eff_rep, dt, backlog)
        st.services.account(lat, lam, dt)
        penalty = st.faults.link_effects(dt, st.t)
        train = st.jobs.step(dt, st.t, penalty)
        mem = st.memory.step(dt, st.np_rng, force_prefix=False)
        util, flops_util = card_activity(w, st, lat, train)
        heat = st.thermals.step(dt, util, flops_util, st.cards.health > 0, st.np_rng)
        self._result = StepResult(lat=lat, train=train, mem=mem, heat=heat, dt=dt)
        snap = build_snapshot(w, st, self._result)
        Summary.update(st.summary, snap, lat, train, w)
        self._snapshot = snap
        return snap

    def _replay_lengths(self, t: float) -> None:
        """Set this step's mean prompt/output lengths from the replayed trace."""
        rp = self.scenario.replay
        i = min(int(t // self.scenario.step_seconds), len(rp["prompt_tokens"]) - 1)
        self.svc.set_lengths(rp["prompt_tokens"][i], rp["output_tokens"][i])

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

    def check(self) -> None:
        """Check every mechanism's invariants (raises :class:`.mechanisms.InvariantError`)."""
        self.state.check()

    def summary(self) -> dict[str, float]:
        """Run-level figures (means over steps, request-weighted latencies, counters)."""
        return Summary.finish(self.state.summary, self.world, self.state)

    # -- persistence ------------------------------------------------------------------
    def save_state(self) -> bytes:
        """Versioned, compressed bytes of scenario + state (see :mod:`.state`)."""
        if self._scenario_json is None:
            self._scenario_json = json.dumps(self.scenario.to_dict())
        return state_mod.dump(self._scenario_json, self.state)

    @classmethod
    def load_state(cls, data: bytes) -> Engine:
        """Rebuild an engine from :meth:`save_state` bytes; continues bit-identically.

        The static side (scenario, world, request model) is a pure function of the scenario's
        JSON text, so the last few built in this process are reused for a state of the same
        scenario (a worker reloading its run pays only the state); each engine gets a fork of
        the world whose per-step scratch is its own (:meth:`.world.World.fork`).
        """
        scen, st = state_mod.load(data)
        if not isinstance(scen, str):  # formats 1-3 carry the scenario as a dict
            return cls(Scenario.from_dict(scen), _state=st)
        static = _STATIC.get(scen)
        if static is None:
            scenario = Scenario.from_dict(json.loads(scen))
            world = World(scenario, features_of(scenario.policy))
            static = scenario, world, RequestModel(world)
            _STATIC[scen] = static
            while len(_STATIC) > _STATIC_MAX:
                _STATIC.popitem(last=False)
        else:
            _STATIC.move_to_end(scen)
        # The cached world is never stepped itself: each engine gets a fork (own per-step
        # scratch) and its own request model object (its per-step hit counters).
        scenario, world, requests = static
        eng = cls(scenario, _state=st, _static=(world.fork(), copy.copy(requests)))
        eng._scenario_json = scen
        return eng


# Static sides of recently loaded scenarios, by scenario JSON text (newest last). Small: a
# worker serves a few runs, and a 102,400-card world is tens of MB.
_STATIC: OrderedDict[str, tuple[Scenario, World, RequestModel]] = OrderedDict()
_STATIC_MAX = 4
