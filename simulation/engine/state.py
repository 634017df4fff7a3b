"""The engine's mutable state: the clock, the RNGs and the mechanisms that own the rest.

:class:`EngineState` holds the clock (``t``, ``steps``), the two RNGs, the run summary
accumulator and one object per mechanism (:mod:`.mechanisms`): ``cards``, ``jobs``,
``services``, ``memory``, ``faults``, ``thermals``. Each mechanism owns and changes its own
slice; nothing else writes it. Static tables are rebuilt from the scenario on load.

The byte format is ``MAGIC + version (1 byte) + body``. Version 4 (written) is
:mod:`.state_codec`: crc32 + lz4(marshal of the state tree), the bulk read and written in C.
Versions 1–3 are read (see "serialisation" below); a state continues bit-identically and
loading runs no code from the data.
"""

from __future__ import annotations

import io
import json
import random
import zlib
from collections import OrderedDict
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from . import state_codec
from .mechanisms import CardPool, FaultState, Jobs, Mechanism, MemoryPool, Services, Thermals
from .state_legacy import LegacyUnpickler as _LegacyUnpickler

if TYPE_CHECKING:  # annotations only
    from .world import World

MAGIC = b"CPTWIN"
FORMAT_VERSION = 4

# Mechanism slots of the state, in the order the engine steps them, and their classes.
MECHANISMS: dict[str, type[Mechanism]] = {
    "cards": CardPool,
    "services": Services,
    "jobs": Jobs,
    "memory": MemoryPool,
    "faults": FaultState,
    "thermals": Thermals,
}


class EngineState:
    """The clock, the RNGs, the summary accumulator and the six mechanisms (nothing else)."""

    def __init__(
        self,
        *,
        cards: CardPool,
        services: Services,
        jobs: Jobs,
        memory: MemoryPool,
        faults: FaultState,
        thermals: Thermals,
        seed: int = 0,
    ) -> None:
        self.t = 0.0
        self.steps = 0
        self.py_rng = random.Random(seed)
        self.np_rng = np.random.Generator(np.random.PCG64(seed))
        self.summary: dict[str, float] = {}
        self.cards, self.services, self.jobs = cards, services, jobs
        self.memory, self.faults, self.thermals = memory, faults, thermals

    @classmethod
    def new(cls, world: World) -> EngineState:
        """The state at t = 0 of ``world``'s scenario (empty cluster, fresh caches)."""
        scen, svc, topo = world.scenario, world.svc, world.scenario.topology
        pol = scen.policy
        return cls(
            cards=CardPool(topo.cards),
            services=Services(svc.n),
            jobs=Jobs(world.jobs.n),
            memory=MemoryPool(
                pol.kv_eviction, svc.n, pol.kv_offload and world.features.pooled_memory
            ),
            faults=FaultState(world.idx.n_links),
            thermals=Thermals(topo.cards, scen.inlet_temp_celsius),
            seed=scen.seed,
        )

    def bind(self, world: World) -> None:
        """Bind the static tables and each mechanism's peers (after creation or loading)."""
        scen, jt = world.scenario, world.jobs
        self.cards.bind(jt.n + world.svc.n)
        self.services.bind(world.svc, self.cards, jt.n)
        self.jobs.bind(jt, world.idx, self.cards)
        self.memory.bind(world, self.cards, self.services, self.jobs)
        self.faults.bind(
            scen.faults, scen.topology, world.idx, self.cards, self.jobs, self.services
        )
        self.thermals.bind(world.hw, scen.inlet_temp_celsius, scen.pue)

    def mechanisms(self) -> dict[str, Mechanism]:
        """The mechanisms by slot name, in stepping order."""
        return {name: getattr(self, name) for name in MECHANISMS}

    @property
    def counters(self) -> MappingProxyType:
        """Every mechanism's cumulative counters, merged (read-only: each mechanism counts
        its own)."""
        merged: dict[str, Any] = {}
        for mech in self.mechanisms().values():
            merged.update(mech.counters)
        return MappingProxyType(merged)

    def check(self) -> None:
        """Run every mechanism's invariant checks (:class:`.mechanisms.InvariantError`)."""
        for mech in self.mechanisms().values():
            mech.check()

    def __getattr__(self, name: str) -> Any:
        # Read-only aliases for the flat attribute names of format 2 (``state.owner``,
        # ``state.job_state``...), so readers written against them keep working; writes go
        # through the owning mechanism.
        where = LEGACY_FIELDS.get(name)
        if where is None:
            raise AttributeError(f"EngineState has no attribute {name!r}")
        return getattr(self.__dict__[where[0]], where[1])

    def __setattr__(self, name: str, value: Any) -> None:
        if name in LEGACY_FIELDS:
            slot, field = LEGACY_FIELDS[name]
            raise AttributeError(f"state.{name} belongs to state.{slot}.{field}: use its methods")
        super().__setattr__(name, value)


# Format 1/2 flat attribute -> (mechanism slot, field). Counters are split by COUNTERS.
LEGACY_FIELDS: dict[str, tuple[str, str]] = {
    "owner": ("cards", "owner"),
    "health": ("cards", "health"),
    "svc_cards": ("services", "cards"),
    "svc_share": ("services", "share"),
    "svc_new_replicas": ("services", "new_replicas"),
    "svc_low_since": ("services", "low_since"),
    "svc_backlog": ("services", "backlog"),
    "svc_timeouts_total": ("services", "timeouts_total"),
    "last_latency": ("services", "last_latency"),
    "job_state": ("jobs", "state"),
    "job_done": ("jobs", "done"),
    "job_ckpt": ("jobs", "ckpt"),
    "job_last_ckpt_t": ("jobs", "last_ckpt_t"),
    "job_overhead": ("jobs", "overhead"),
    "job_queued_since": ("jobs", "queued_since"),
    "job_wait_total": ("jobs", "wait_total"),
    "job_preemptions": ("jobs", "preempted"),
    "job_racks": ("jobs", "racks"),
    "job_sns": ("jobs", "sns"),
    "job_active": ("jobs", "active"),
    "job_cards": ("jobs", "cards"),
    "caches": ("memory", "caches"),
    "dram_caches": ("memory", "dram_caches"),
    "cache_seq": ("memory", "cache_seq"),
    "prefix_pending": ("memory", "prefix_pending"),
    "prefix_last": ("memory", "prefix_last"),
    "svc_hit": ("memory", "hit"),
    "failed_until": ("faults", "failed_until"),
    "link_up": ("faults", "link_up"),
    "link_failed_until": ("faults", "link_failed_until"),
    "link_reroute_until": ("faults", "link_reroute_until"),
    "temperature": ("thermals", "temperature"),
}
# Flat format 1/2 attributes with no successor: a never-written counter, an unused dict and
# a copy of a static table (rebuilt from the scenario).
_LEGACY_DROPPED = {"pool", "job_flops_per_sample"}
_LEGACY_DROPPED_COUNTERS = {"requests"}


def from_legacy(flat: dict[str, Any]) -> EngineState:
    """Convert a format 1/2 state (one flat attribute dict) into mechanisms; nothing lost.

    Fields added at run time by the old engine (``svc_backlog``, ``svc_timeouts_total``,
    ``prefix_pending``) start at zero when a state from before their first step lacks them.
    """
    n_services = len(flat["svc_share"])
    defaults = {
        "svc_backlog": np.zeros(n_services),
        "svc_timeouts_total": np.zeros(n_services),
        "prefix_pending": 0.0,
    }
    slots: dict[str, dict[str, Any]] = {name: {"counters": {}} for name in MECHANISMS}
    for old, (slot, field) in LEGACY_FIELDS.items():
        if old in flat:
            slots[slot][field] = flat[old]
        elif old in defaults:
            slots[slot][field] = defaults[old]
    owner_of = {key: slot for slot, cls in MECHANISMS.items() for key in cls.COUNTERS}
    for key, value in flat.get("counters", {}).items():
        if key in _LEGACY_DROPPED_COUNTERS:
            continue
        if key not in owner_of:
            raise ValueError(f"state: format 2 counter {key!r} has no owner; reset the run")
        slots[owner_of[key]]["counters"][key] = value
    known = {*LEGACY_FIELDS, *_LEGACY_DROPPED, "counters", "t", "steps", "py_rng", "np_rng"}
    unknown = sorted(set(flat) - known - {"summary"})
    if unknown:
        raise ValueError(f"state: format 2 field(s) {', '.join(unknown)} unknown; reset the run")
    st = _assemble({name: MECHANISMS[name].from_fields(f) for name, f in slots.items()})
    for name in ("t", "steps", "py_rng", "np_rng"):
        object.__setattr__(st, name, flat[name])
    st.summary = flat.get("summary", {})
    return st


def _assemble(mechs: dict[str, Mechanism]) -> EngineState:
    st = EngineState.__new__(EngineState)
    for name, mech in mechs.items():
        object.__setattr__(st, name, mech)
    return st


# --- serialisation ------------------------------------------------------------------------
# Format 4 (written since 2026-12-03): see :mod:`.state_codec` (same state tree as format 3).
# Format 3 (read; ``dump_v3`` still writes it for the benchmark and tests): MAGIC + b"\x03"
# + zlib(npz). The npz holds every NumPy array of the state under a generated name plus
# ``__manifest__``: UTF-8 JSON of the scenario and the state
# tree ``{"clock": {t, steps, py_rng, np_rng}, "summary": {...}, "mechanisms": {slot:
# {field: value, "counters": {...}}}}`` (each mechanism's ``fields()``), where arrays are
# ``{"$nd": name}`` and the few non-JSON values are tagged (``$tuple``, ``$dict`` for
# non-string keys, ``$odict``, ``$random``, ``$npgen``, ``$np`` scalars, ``$obj`` for the
# cache classes listed in ``_classes``). Loading needs no pickle and runs no code from the
# data; anything else in a state is refused when *saving*, naming the field, so the format
# only changes on purpose (bump FORMAT_VERSION and keep a reader).
# Format 2 (read only, written before 2026-12-01): the same container with one flat attribute
# dict as the state tree; converted by :func:`from_legacy`.
# Format 1 (read only): zlib(pickle), written before 2026-11; read through an unpickler that
# admits only NumPy arrays, RNG states and the engine's cache classes, then converted alike.


def _classes() -> dict[str, type]:
    from .memory.cache import LRUCache, LRUKCache

    return {"LRUCache": LRUCache, "LRUKCache": LRUKCache}


_PLAIN = (int, float, str, bool, type(None))
_PLAIN_SET = frozenset(_PLAIN)


def _flat(x: Any) -> bool:
    """A plain value or a tuple of plain values (a cache key)."""
    t = type(x)
    return t in _PLAIN_SET or (t is tuple and all(type(y) in _PLAIN_SET for y in x))


def _flat_value(x: Any) -> bool:
    """A plain value or a list of plain values (a cache's access history)."""
    t = type(x)
    return t in _PLAIN_SET or (t is list and all(type(y) in _PLAIN_SET for y in x))


def _untuple(x: Any) -> Any:
    return list(x) if type(x) is tuple else x


def _retuple(x: Any) -> Any:
    return tuple(x) if type(x) is list else x


def _encode(value: Any, arrays: dict[str, np.ndarray], path: str) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)) and type(value) in (int, float):
        return value
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise TypeError(f"state: {path} is an object array; store plain arrays")
        name = f"a{len(arrays)}"
        arrays[name] = value
        return {"$nd": name}
    if isinstance(value, np.generic):
        return {"$np": value.dtype.str, "v": value.item()}
    if isinstance(value, tuple):
        if all(type(v) in _PLAIN for v in value):  # fast path: cache keys, heap entries
            return {"$tuple": list(value)}
        return {"$tuple": [_encode(v, arrays, f"{path}[{i}]") for i, v in enumerate(value)]}
    if isinstance(value, list):
        if all(type(v) in _PLAIN for v in value):
            return value
        if _is_array_list(value):
            # Per-job / per-service card lists: one array + offsets, not thousands of members.
            name = f"a{len(arrays)}"
            arrays[name] = np.concatenate(value) if value else np.empty(0, np.int64)
            arrays[name + "_offsets"] = np.cumsum([0, *(len(v) for v in value)])
            return {"$ndlist": name, "dtype": value[0].dtype.str if value else "<i8"}
        if all(type(v) is tuple and all(map(_flat, v)) for v in value):
            # Fast path for heap entries ``(time, seq, key)``: lists inside stand for tuples.
            return {"$tuples": [[_untuple(x) for x in v] for v in value]}
        if all(map(_flat, value)):  # fast path: lists of cache keys
            return {"$keys": [_untuple(v) for v in value]}
        return [_encode(v, arrays, f"{path}[{i}]") for i, v in enumerate(value)]
    if (
        isinstance(value, dict)
        and type(value) in (dict, OrderedDict)
        and (isinstance(value, OrderedDict) or not all(type(k) is str for k in value))
        and all(map(_flat, value))
        and all(map(_flat_value, value.values()))
    ):
        # Fast path for the caches' maps (key tuples -> None or a list of access times): one
        # JSON list each for keys and values instead of a tagged pair per entry.
        return {
            "$map": [_untuple(k) for k in value],
            "v": list(value.values()),
            "ordered": isinstance(value, OrderedDict),
        }
    if isinstance(value, OrderedDict):
        return {"$odict": [[_encode(k, arrays, path), _encode(v, arrays, f"{path}[{k!r}]")]
                           for k, v in value.items()]}  # fmt: skip
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("$") for k in value):
            return {k: _encode(v, arrays, f"{path}.{k}") for k, v in value.items()}
        return {"$dict": [[_encode(k, arrays, path), _encode(v, arrays, f"{path}[{k!r}]")]
                          for k, v in value.items()]}  # fmt: skip
    if isinstance(value, random.Random):
        return {"$random": _encode(value.getstate(), arrays, path)}
    if isinstance(value, np.random.Generator):
        return {"$npgen": _encode(value.bit_generator.state, arrays, path)}
    name = type(value).__name__
    if _classes().get(name) is type(value):
        return {"$obj": name, "fields": _encode(vars(value), arrays, f"{path}<{name}>")}
    raise TypeError(f"state: {path} holds a {name}, which the state format does not store")


def _is_array_list(value: list) -> bool:
    """A non-empty list of 1-D arrays of one plain dtype (stored flat with offsets)."""
    if not value or not all(isinstance(v, np.ndarray) and v.ndim == 1 for v in value):
        return False
    dtype = value[0].dtype
    return not dtype.hasobject and all(v.dtype == dtype for v in value)


def _decode(value: Any, arrays: Any) -> Any:
    if isinstance(value, list):
        if all(type(v) in _PLAIN for v in value):
            return value
        return [_decode(v, arrays) for v in value]
    if not isinstance(value, dict):
        return value
    if "$nd" in value:
        return arrays[value["$nd"]]
    if "$map" in value:
        pairs = zip(map(_retuple, value["$map"]), value["v"], strict=True)
        return OrderedDict(pairs) if value["ordered"] else dict(pairs)
    if "$keys" in value:
        return [_retuple(v) for v in value["$keys"]]
    if "$tuples" in value:
        return [tuple(map(_retuple, v)) for v in value["$tuples"]]
    if "$ndlist" in value:
        flat, offsets = arrays[value["$ndlist"]], arrays[value["$ndlist"] + "_offsets"]
        return [flat[a:b].copy() for a, b in zip(offsets[:-1], offsets[1:], strict=True)]
    if "$np" in value:
        return np.dtype(value["$np"]).type(value["v"])
    if "$tuple" in value:
        items = value["$tuple"]
        if all(type(v) in _PLAIN for v in items):
            return tuple(items)
        return tuple(_decode(v, arrays) for v in items)
    if "$odict" in value:
        return OrderedDict((_key(k, arrays), _decode(v, arrays)) for k, v in value["$odict"])
    if "$dict" in value:
        return {_key(k, arrays): _decode(v, arrays) for k, v in value["$dict"]}
    if "$random" in value:
        rng = random.Random()
        rng.setstate(_decode(value["$random"], arrays))
        return rng
    if "$npgen" in value:
        state = _decode(value["$npgen"], arrays)
        if state.get("bit_generator") != "PCG64":
            raise ValueError(f"state: unsupported bit generator {state.get('bit_generator')!r}")
        bit_generator = np.random.PCG64(0)  # seed irrelevant: the state is set next
        bit_generator.state = state
        return np.random.Generator(bit_generator)
    if "$obj" in value:
        cls = _classes().get(value["$obj"])
        if cls is None:
            raise ValueError(f"state: unknown object type {value['$obj']!r}")
        obj = cls.__new__(cls)
        obj.__dict__.update(_decode(value["fields"], arrays))
        return obj
    return {k: _decode(v, arrays) for k, v in value.items()}


def _key(value: Any, arrays: Any) -> Any:
    key = _decode(value, arrays)
    return tuple(key) if isinstance(key, list) else key  # dict keys are hashable


def _tree(state: EngineState) -> dict[str, Any]:
    return {
        "clock": {
            "t": state.t,
            "steps": state.steps,
            "py_rng": state.py_rng,
            "np_rng": state.np_rng,
        },
        "summary": state.summary,
        "mechanisms": {name: mech.fields() for name, mech in state.mechanisms().items()},
    }


def _from_tree(tree: dict[str, Any]) -> EngineState:
    given = tree.get("mechanisms", {})
    missing = [name for name in MECHANISMS if name not in given]
    if missing:
        raise ValueError(f"state: format 3 data lacks mechanism(s) {', '.join(missing)}")
    st = _assemble({name: cls.from_fields(given[name]) for name, cls in MECHANISMS.items()})
    for name, value in tree["clock"].items():
        object.__setattr__(st, name, value)
    st.summary = tree.get("summary", {})
    return st


def dump(scenario: dict | str, state: EngineState) -> bytes:
    """Serialise scenario + state to the versioned byte format (format 4, :mod:`.state_codec`).

    ``scenario`` is the scenario's dict or, cheaper for an engine that saves often, its JSON
    text (the scenario does not change while an engine runs).
    """
    scenario_json = scenario if isinstance(scenario, str) else json.dumps(scenario)
    return state_codec.dump(MAGIC, scenario_json, _tree(state))


def dump_v3(scenario: dict | str, state: EngineState) -> bytes:
    """Format 3 bytes (zlib(npz) + tagged JSON): kept to measure against and to test its
    reader; the engine writes format 4."""
    arrays: dict[str, np.ndarray] = {}
    tree = _encode(_tree(state), arrays, "state")
    scenario_json = scenario if isinstance(scenario, str) else json.dumps(scenario)
    manifest = f'{{"version": 3, "scenario": {scenario_json}, "state": {json.dumps(tree)}}}'
    buffer = io.BytesIO()
    np.savez(buffer, __manifest__=np.frombuffer(manifest.encode(), dtype=np.uint8), **arrays)
    return MAGIC + bytes([3]) + zlib.compress(buffer.getvalue(), 3)


def load(data: bytes) -> tuple[dict | str, EngineState]:
    """Inverse of :func:`dump`; reads formats 1–4; ``ValueError`` naming the problem on
    foreign, corrupt or newer data. The scenario comes back as its JSON text from format 4
    (so a caller can reuse a world built for the same text), as a dict from older formats."""
    if not isinstance(data, (bytes, bytearray)) or not data.startswith(MAGIC):
        raise ValueError("state: not an engine state (bad magic)")
    version = data[len(MAGIC)]
    if version > FORMAT_VERSION:
        raise ValueError(
            f"state: format version {version} is newer than this engine reads "
            f"(1–{FORMAT_VERSION}); upgrade the portal or reset the run"
        )
    if version == 4:
        scenario_json, tree = state_codec.load(data, len(MAGIC) + 1)
        return scenario_json, _from_tree(tree)
    try:
        body = zlib.decompress(bytes(data[len(MAGIC) + 1 :]))
    except zlib.error as exc:
        raise ValueError(f"state: corrupt (format {version}): {exc}") from None
    if version == 1:
        payload = _LegacyUnpickler(io.BytesIO(body)).load()
        return payload["scenario"], from_legacy(payload["state"])
    if version not in (2, 3):
        raise ValueError(f"state: unknown format version {version}; reset the run")
    with np.load(io.BytesIO(body), allow_pickle=False) as npz:
        arrays = {name: npz[name] for name in npz.files}
    manifest = json.loads(arrays.pop("__manifest__").tobytes().decode())
    fields = _decode(manifest["state"], arrays)
    state = from_legacy(fields) if version == 2 else _from_tree(fields)
    return manifest["scenario"], state
