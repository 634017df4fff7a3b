"""Scenario dataclasses: validated on construction, round-trip through JSON.

Every ``ValueError`` names the object and the offending field so a form or API can point at it.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ..catalog import HARDWARE, MODELS
from ..perf.profiles import CHOICES as PROFILE_CHOICES
from .features import Features

POLICIES = ("split", "unified")
# Keys of ``Scenario.replay``: per-step means, the replayed rows (issue 25) and a count.
_REPLAY_KEYS = {"prompt_tokens", "output_tokens", "requests", "prompts_truncated"}
CRITICALITIES = ("core", "non-core")
EVICTION_POLICIES = ("lru", "lru-k")
WEIGHT_DTYPES = ("bf16", "fp8", "int8")


def _check(ok: bool, where: str, fld: str, msg: str, value: Any) -> None:
    """Raise a ``ValueError`` naming the object and field when ``ok`` is false."""
    if not ok:
        raise ValueError(f"{where}: field {fld!r} {msg} (got {value!r})")


def _positive(where: str, obj: Any, *names: str) -> None:
    for n in names:
        v = getattr(obj, n)
        _check(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0,
            where,
            n,
            "must be a finite number > 0",
            v,
        )


def _fraction(where: str, obj: Any, *names: str) -> None:
    for n in names:
        v = getattr(obj, n)
        _check(
            isinstance(v, (int, float)) and not isinstance(v, bool) and 0.0 <= v <= 1.0,
            where,
            n,
            "must be a number in [0, 1]",
            v,
        )


def _check_replay_rows(rows: Any) -> None:
    """Replayed request rows: sorted times, positive lengths, optional block-id lists."""
    if rows is None:
        return
    w, f = "Scenario", "replay"
    _check(isinstance(rows, dict), w, f, "requests must be an object", type(rows).__name__)
    t, p, o = rows.get("t"), rows.get("prompt"), rows.get("output")
    ok = all(isinstance(x, list) for x in (t, p, o)) and len(t) == len(p) == len(o)
    _check(ok, w, f, "requests needs equal-length t/prompt/output lists", sorted(rows))
    _check(
        all(math.isfinite(x) and x >= 0 for x in t)
        and all(b >= a for a, b in zip(t, t[1:], strict=False)),
        w,
        f,
        "requests.t must be sorted finite seconds >= 0",
        t[:3],
    )
    _check(
        all(math.isfinite(x) and x > 0 for x in p + o),
        w,
        f,
        "requests prompt/output must be > 0",
        (p[:3], o[:3]),
    )
    ids = rows.get("hash_ids")
    _check(
        ids is None or (isinstance(ids, list) and len(ids) == len(t)),
        w,
        f,
        "requests.hash_ids must have one list per request",
        type(ids).__name__,
    )
    extra = sorted(set(rows) - {"t", "prompt", "output", "hash_ids"})
    _check(not extra, w, f, "requests has unknown keys", extra)


def _from_dict(cls: type, data: Any, where: str) -> Any:
    """Build ``cls`` from a dict, rejecting unknown keys by name."""
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected an object, got {type(data).__name__}")
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {unknown}")
    try:
        return cls(**data)
    except TypeError as exc:  # missing required argument
        raise ValueError(f"{where}: {exc}") from None


@dataclass
class Topology:
    """Supernodes -> racks -> nodes -> cards, plus fabric convergence ratios.

    Defaults follow a CloudMatrix-384-style supernode: 8 cards per node, 3 nodes per rack,
    16 racks (384 cards); in-rack 1:1, inter-rack 2:1. Traffic between supernodes is assumed
    4:1 (an operator input: no public figure). The last supernode may be partial when
    ``cards`` is not a multiple of the supernode size.
    """

    cards: int
    hardware: str = "ascend-910c"
    cards_per_node: int = 8
    nodes_per_rack: int = 3
    racks_per_supernode: int = 16
    in_rack_convergence: float = 1.0
    inter_rack_convergence: float = 2.0
    inter_supernode_convergence: float = 4.0
    uplinks_per_rack: int = 8
    link_bandwidth_bytes_per_s: float = 50e9
    host_dram_per_node_bytes: float = float(2**40)

    def __post_init__(self) -> None:
        w = "Topology"
        _check(
            isinstance(self.cards, int) and self.cards > 0,
            w,
            "cards",
            "must be int > 0",
            self.cards,
        )
        _check(
            self.hardware in HARDWARE,
            w,
            "hardware",
            f"must be one of {sorted(HARDWARE)}",
            self.hardware,
        )
        for n in ("cards_per_node", "nodes_per_rack", "racks_per_supernode", "uplinks_per_rack"):
            v = getattr(self, n)
            _check(isinstance(v, int) and v > 0, w, n, "must be int > 0", v)
        _positive(w, self, "link_bandwidth_bytes_per_s", "host_dram_per_node_bytes")
        for n in ("in_rack_convergence", "inter_rack_convergence", "inter_supernode_convergence"):
            v = getattr(self, n)
            _check(isinstance(v, (int, float)) and v >= 1.0, w, n, "must be >= 1 (ratio x:1)", v)

    @property
    def cards_per_supernode(self) -> int:
        """Cards in a full supernode."""
        return self.cards_per_node * self.nodes_per_rack * self.racks_per_supernode


@dataclass
class TrainingJob:
    """A training job: gang of ``min_cards``..``max_cards`` (elastic when they differ).

    ``work_samples`` is the total number of samples to process; the job finishes when done.
    ``comm_share`` is the communication share of step time when the job sits in one rack.
    """

    name: str
    tenant: str
    params: float
    min_cards: int
    max_cards: int
    work_samples: float
    seq_len: int = 4096
    global_batch: int = 1024
    priority: int = 0
    checkpoint_interval_s: float = 1800.0
    base_mfu: float = 0.40
    comm_share: float = 0.08
    submit_time_s: float = 0.0
    model: str | None = None

    def __post_init__(self) -> None:
        w = f"TrainingJob {self.name!r}"
        _check(
            isinstance(self.name, str) and bool(self.name),
            w,
            "name",
            "must be non-empty",
            self.name,
        )
        _check(
            isinstance(self.tenant, str) and bool(self.tenant),
            w,
            "tenant",
            "must be non-empty",
            self.tenant,
        )
        if self.model is not None:
            _check(self.model in MODELS, w, "model", f"must be one of {sorted(MODELS)}", self.model)
        _positive(
            w, self, "params", "work_samples", "seq_len", "global_batch", "checkpoint_interval_s"
        )
        for n in ("min_cards", "max_cards"):
            v = getattr(self, n)
            _check(isinstance(v, int) and v > 0, w, n, "must be int > 0", v)
        _check(
            self.max_cards >= self.min_cards, w, "max_cards", "must be >= min_cards", self.max_cards
        )
        _check(0 < self.base_mfu <= 0.8, w, "base_mfu", "must be in (0, 0.8]", self.base_mfu)
        _check(0 <= self.comm_share < 0.9, w, "comm_share", "must be in [0, 0.9)", self.comm_share)
        _check(self.submit_time_s >= 0, w, "submit_time_s", "must be >= 0", self.submit_time_s)
        _check(isinstance(self.priority, int), w, "priority", "must be an int", self.priority)

    @property
    def elastic(self) -> bool:
        """True when the job can run on any card count between min and max."""
        return self.max_cards > self.min_cards


@dataclass
class InferenceService:
    """An inference service: model, replica size (TP cards), SLOs and a diurnal arrival curve.

    ``mean_rate_rps`` is the daily mean request rate; the curve is a cosine with the given
    peak-to-trough ratio peaking at ``peak_hour``, switched off outside the service's daily
    on-window for an on/off service. ``traffic_share`` (0..1) is the share of the
    service's demand routed to this cluster (gray migration).
    """

    name: str
    tenant: str
    model: str
    tp: int
    mean_rate_rps: float
    criticality: str = "non-core"
    slo_p99_ms: float = 20000.0
    slo_ttft_ms: float = 2000.0
    prompt_tokens_mean: float = 1024.0
    output_tokens_mean: float = 256.0
    prefix_share: float = 0.3
    max_batch: int = 32
    min_replicas: int = 1
    peak_to_trough: float = 2.5
    peak_hour: float = 14.0
    arrival_cv: float = 1.0
    traffic_share: float = 1.0
    # Serving fidelity (issue 13): TPOT target, expert parallelism, weight precision, timeout.
    slo_tpot_ms: float = 100.0
    ep: int = 1
    weight_dtype: str = "bf16"
    timeout_s: float = 300.0
    # Real fleets (issue 25 part 3, scenario/inference_demand.py): an on/off service takes
    # requests only ``on_hours`` a day from ``on_start_hour`` (24 = always on); the daily mean
    # rate stays ``mean_rate_rps``. ``reserved_replicas`` is the capacity its tenant provisioned
    # for its peak: a static partition (``split``) keeps them up, idle or not.
    on_hours: float = 24.0
    on_start_hour: float = 0.0
    reserved_replicas: int = 0
    # Autoscaler ceiling (an HPA / KServe ``maxReplicas``; 0 = none). With ``min_replicas``
    # equal to it the capacity is pinned: the fixed fleet a steady-state load sweep needs.
    max_replicas: int = 0

    def __post_init__(self) -> None:
        w = f"InferenceService {self.name!r}"
        _check(
            isinstance(self.on_hours, (int, float)) and 0.5 <= self.on_hours <= 24.0,
            w,
            "on_hours",
            "must be a number of hours in [0.5, 24]",
            self.on_hours,
        )
        _check(
            isinstance(self.on_start_hour, (int, float)) and 0 <= self.on_start_hour < 24,
            w,
            "on_start_hour",
            "must be in [0, 24)",
            self.on_start_hour,
        )
        _check(
            isinstance(self.reserved_replicas, int) and self.reserved_replicas >= 0,
            w,
            "reserved_replicas",
            "must be int >= 0",
            self.reserved_replicas,
        )
        _check(isinstance(self.ep, int) and self.ep > 0, w, "ep", "must be int > 0", self.ep)
        _check(
            self.ep == 1 or self.ep % self.tp == 0,
            w,
            "ep",
            "must be 1 or a multiple of tp",
            self.ep,
        )
        _check(
            self.weight_dtype in WEIGHT_DTYPES,
            w,
            "weight_dtype",
            f"must be one of {WEIGHT_DTYPES}",
            self.weight_dtype,
        )
        _positive(w, self, "slo_tpot_ms", "timeout_s")
        _check(
            isinstance(self.name, str) and bool(self.name),
            w,
            "name",
            "must be non-empty",
            self.name,
        )
        _check(
            isinstance(self.tenant, str) and bool(self.tenant),
            w,
            "tenant",
            "must be non-empty",
            self.tenant,
        )
        _check(self.model in MODELS, w, "model", f"must be one of {sorted(MODELS)}", self.model)
        _check(isinstance(self.tp, int) and self.tp > 0, w, "tp", "must be int > 0", self.tp)
        _check(
            self.criticality in CRITICALITIES,
            w,
            "criticality",
            f"must be one of {CRITICALITIES}",
            self.criticality,
        )
        _positive(
            w,
            self,
            "mean_rate_rps",
            "slo_p99_ms",
            "slo_ttft_ms",
            "prompt_tokens_mean",
            "output_tokens_mean",
            "arrival_cv",
        )
        _check(
            isinstance(self.max_batch, int) and self.max_batch > 0,
            w,
            "max_batch",
            "must be int > 0",
            self.max_batch,
        )
        _check(
            isinstance(self.min_replicas, int) and self.min_replicas >= 0,
            w,
            "min_replicas",
            "must be int >= 0",
            self.min_replicas,
        )
        _check(
            isinstance(self.max_replicas, int)
            and (self.max_replicas == 0 or self.max_replicas >= max(self.min_replicas, 1)),
            w,
            "max_replicas",
            "must be int: 0 (no ceiling) or >= min_replicas and >= 1",
            self.max_replicas,
        )
        _check(self.peak_to_trough >= 1.0, w, "peak_to_trough", "must be >= 1", self.peak_to_trough)
        _check(0 <= self.peak_hour < 24, w, "peak_hour", "must be in [0, 24)", self.peak_hour)
        _fraction(w, self, "prefix_share", "traffic_share")
        _check(
            self.prompt_tokens_mean + self.output_tokens_mean <= 1_000_000,
            w,
            "prompt_tokens_mean",
            "context too long",
            self.prompt_tokens_mean,
        )


@dataclass
class Policy:
    """Scheduling policy and its parameters.

    ``target_utilization`` is the slot occupancy inference replicas are sized for (SLO
    headroom); ``night_window`` = (start_hour, end_hour) lets non-core services run hotter at
    night so training gets more cards. ``inference_pool_fraction`` (split only) fixes the
    inference partition; ``None`` sizes it for the services' peak demand.
    """

    name: str = "unified"
    target_utilization: float = 0.65
    night_window: tuple[float, float] | None = None
    night_target_utilization: float = 0.85
    inference_pool_fraction: float | None = None
    kv_eviction: str = "lru-k"
    kv_block_tokens: int = 16
    elastic: bool = True
    preemption: bool = True
    resize_overhead_s: float = 120.0
    scale_down_hysteresis: float = 0.8
    kv_offload: bool = True
    reserve_fraction_split: float = 0.9
    locality_wait_s: float = 1800.0
    scale_down_delay_s: float = 600.0
    # Priority preemption among training jobs, as cluster schedulers do it (Kueue's
    # ``withinClusterQueue: LowerPriority``, Volcano's preempt action, Slurm's
    # ``PreemptType=preempt/qos``): a queued job that has waited this long may stop running
    # jobs of strictly lower priority (they lose the work since their checkpoint); None: off.
    priority_preempt_wait_s: float | None = 900.0
    # Mechanisms (issue 14); None = the placement rule's preset (sched.policy.FEATURE_PRESETS).
    features: Features | None = None

    def __post_init__(self) -> None:
        w = "Policy"
        self.features = Features.coerce(self.features)
        if isinstance(self.night_window, list):
            self.night_window = tuple(self.night_window)
        _check(self.name in POLICIES, w, "name", f"must be one of {POLICIES}", self.name)
        _check(
            self.kv_eviction in EVICTION_POLICIES,
            w,
            "kv_eviction",
            f"must be one of {EVICTION_POLICIES}",
            self.kv_eviction,
        )
        _check(
            0.05 <= self.target_utilization <= 0.98,
            w,
            "target_utilization",
            "must be in [0.05, 0.98]",
            self.target_utilization,
        )
        _check(
            0.05 <= self.night_target_utilization <= 0.98,
            w,
            "night_target_utilization",
            "must be in [0.05, 0.98]",
            self.night_target_utilization,
        )
        if self.night_window is not None:
            nw = self.night_window
            _check(
                len(nw) == 2 and all(0 <= h < 24 for h in nw),
                w,
                "night_window",
                "must be (start_hour, end_hour) within [0, 24)",
                nw,
            )
        if self.inference_pool_fraction is not None:
            _fraction(w, self, "inference_pool_fraction")
        _check(
            isinstance(self.kv_block_tokens, int) and self.kv_block_tokens > 0,
            w,
            "kv_block_tokens",
            "must be int > 0",
            self.kv_block_tokens,
        )
        _check(
            self.resize_overhead_s >= 0,
            w,
            "resize_overhead_s",
            "must be >= 0",
            self.resize_overhead_s,
        )
        _fraction(w, self, "scale_down_hysteresis", "reserve_fraction_split")
        _check(
            self.scale_down_delay_s >= 0,
            w,
            "scale_down_delay_s",
            "must be >= 0",
            self.scale_down_delay_s,
        )
        _check(
            self.locality_wait_s >= 0, w, "locality_wait_s", "must be >= 0", self.locality_wait_s
        )
        _check(
            self.priority_preempt_wait_s is None or self.priority_preempt_wait_s >= 0,
            w,
            "priority_preempt_wait_s",
            "must be >= 0 or null",
            self.priority_preempt_wait_s,
        )


@dataclass
class Faults:
    """Failure model. MTBFs are per card / per link; repairs and reroutes are durations.

    Card MTBF default ~50,000 h matches the interruption rate Meta reported for Llama 3 training
    (about one hardware interruption per 3 h on 16k GPUs). Optical link MTBF is an operator input.
    """

    enabled: bool = True
    card_mtbf_hours: float = 50_000.0
    card_repair_hours: float = 4.0
    link_mtbf_hours: float = 20_000.0
    link_repair_hours: float = 2.0
    reroute_seconds: float = 30.0
    restart_overhead_s: float = 300.0

    def __post_init__(self) -> None:
        _positive(
            "Faults",
            self,
            "card_mtbf_hours",
            "card_repair_hours",
            "link_mtbf_hours",
            "link_repair_hours",
            "reroute_seconds",
        )
        _check(
            self.restart_overhead_s >= 0,
            "Faults",
            "restart_overhead_s",
            "must be >= 0",
            self.restart_overhead_s,
        )


@dataclass
class Scenario:
    """Everything the engine needs: topology, workloads, policy, faults, seed and step length.

    ``demand_curve`` (optional) replaces the services' cosine diurnal curves with a replayed rate
    multiplier series (mean 1), sampled every ``demand_curve_step_s`` seconds and wrapped around.
    """

    topology: Topology
    training_jobs: list[TrainingJob] = field(default_factory=list)
    services: list[InferenceService] = field(default_factory=list)
    policy: Policy = field(default_factory=Policy)
    faults: Faults = field(default_factory=Faults)
    seed: int = 0
    step_seconds: float = 60.0
    start_hour: float = 0.0
    pue: float = 1.3
    inlet_temp_celsius: float = 25.0
    demand_curve: list[float] | None = None
    demand_curve_step_s: float = 60.0
    # Time-faithful trace replay (issue 13, see replay.py): per-step mean prompt/output tokens
    # ({"prompt_tokens": [...], "output_tokens": [...]}); demand is then exact (no noise).
    replay: dict | None = None
    # Serving-stack constants of the perf model (``perf/profiles.py``): ``current`` is the
    # 2024+ stack of the cluster's part; ``splitwise-2023`` reproduces the issue-13 twin.
    perf_profile: str = "current"

    def __post_init__(self) -> None:
        w = "Scenario"
        _check(
            self.perf_profile in PROFILE_CHOICES,
            w,
            "perf_profile",
            f"must be one of {', '.join(PROFILE_CHOICES)}",
            self.perf_profile,
        )
        _check(
            isinstance(self.seed, int) and self.seed >= 0, w, "seed", "must be int >= 0", self.seed
        )
        _positive(w, self, "step_seconds", "pue", "demand_curve_step_s")
        _check(0 <= self.start_hour < 24, w, "start_hour", "must be in [0, 24)", self.start_hour)
        _check(1.0 <= self.pue <= 3.0, w, "pue", "must be in [1, 3]", self.pue)
        names = [j.name for j in self.training_jobs] + [s.name for s in self.services]
        dup = (
            sorted({n for n in names if names.count(n) > 1})
            if len(set(names)) != len(names)
            else []
        )
        _check(not dup, w, "training_jobs/services", "names must be unique", dup)
        if self.demand_curve is not None:
            dc = list(self.demand_curve)
            _check(
                len(dc) > 0 and all(math.isfinite(x) and x >= 0 for x in dc),
                w,
                "demand_curve",
                "must be a non-empty list of finite numbers >= 0",
                dc[:5],
            )
        if self.replay is not None:
            rp = self.replay
            _check(
                isinstance(rp, dict)
                and {"prompt_tokens", "output_tokens"} <= set(rp) <= _REPLAY_KEYS
                and len(rp["prompt_tokens"]) == len(rp["output_tokens"]) > 0
                and all(math.isfinite(x) and x > 0 for x in rp["prompt_tokens"])
                and all(math.isfinite(x) and x > 0 for x in rp["output_tokens"]),
                w,
                "replay",
                "must hold equal-length positive prompt_tokens/output_tokens lists",
                type(rp).__name__,
            )
            _check_replay_rows(rp.get("requests"))
        for j in self.training_jobs:
            _check(
                j.min_cards <= self.topology.cards,
                w,
                "training_jobs",
                f"job {j.name!r} needs more cards than the cluster has",
                j.min_cards,
            )
        for s in self.services:
            _check(
                s.tp <= self.topology.cards, w, "services", "replica larger than cluster", s.name
            )

    # -- JSON round trip -----------------------------------------------------------------
    def to_dict(self) -> dict:
        """Plain-data form; ``from_dict(to_dict())`` reproduces an equal scenario."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Scenario:
        """Build and validate from plain data; errors name the object and field."""
        if not isinstance(data, dict):
            raise ValueError("Scenario: expected an object")
        d = dict(data)
        if "topology" not in d:
            raise ValueError("Scenario: field 'topology' is required")
        d["topology"] = _from_dict(Topology, d["topology"], "Topology")
        d["training_jobs"] = [
            _from_dict(TrainingJob, j, f"training_jobs[{i}]")
            for i, j in enumerate(d.get("training_jobs", []))
        ]
        d["services"] = [
            _from_dict(InferenceService, s, f"services[{i}]")
            for i, s in enumerate(d.get("services", []))
        ]
        d["policy"] = _from_dict(Policy, d.get("policy", {}), "Policy")
        d["faults"] = _from_dict(Faults, d.get("faults", {}), "Faults")
        return _from_dict(cls, d, "Scenario")

    def to_json(self) -> str:
        """JSON text of :meth:`to_dict`."""
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Scenario:
        """Parse JSON text; malformed JSON becomes a ``ValueError`` too."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"Scenario: invalid JSON: {exc}") from None
        return cls.from_dict(data)
