"""Mutable engine state and its versioned, compact serialisation.

Everything that changes while the engine runs lives in :class:`EngineState` as plain Python
data, NumPy arrays and the cache objects; static tables are rebuilt from the scenario on load.
The byte format is ``MAGIC + version (1 byte) + zlib(npz)``: arrays stored as NumPy writes
them, everything else as tagged JSON (see "serialisation" below), so a state continues
bit-identically and loading runs no code from the data; zlib keeps a 10k-card state small.
"""

from __future__ import annotations

import io
import json
import pickle
import random
import zlib
from collections import OrderedDict
from typing import Any

import numpy as np

MAGIC = b"CPTWIN"
FORMAT_VERSION = 2


class EngineState:
    """All mutable simulation state (clock, RNGs, placements, jobs, services, caches, counters)."""

    def __init__(self, n_cards: int, n_links: int, n_jobs: int, n_services: int, seed: int):
        import random

        self.t = 0.0
        self.steps = 0
        self.py_rng = random.Random(seed)
        self.np_rng = np.random.Generator(np.random.PCG64(seed))
        # Cards: owner (-1 free, 0..J-1 job, J.. service), health 1/0, temperature.
        self.owner = np.full(n_cards, -1, dtype=np.int32)
        self.health = np.ones(n_cards, dtype=np.int8)
        self.failed_until: dict[int, float] = {}
        self.temperature = np.zeros(n_cards, dtype=np.float32)
        self.link_up = np.ones(n_links, dtype=bool)
        self.link_failed_until: dict[int, float] = {}
        self.link_reroute_until: dict[int, float] = {}
        # Training jobs: 0 not yet submitted, 1 queued, 2 running, 3 done.
        self.job_state = np.zeros(n_jobs, dtype=np.int8)
        self.job_done = np.zeros(n_jobs)
        self.job_ckpt = np.zeros(n_jobs)
        self.job_last_ckpt_t = np.zeros(n_jobs)
        self.job_overhead = np.zeros(n_jobs)  # seconds of restart still to pay
        self.job_queued_since = np.zeros(n_jobs)
        self.job_wait_total = np.zeros(n_jobs)
        self.job_preemptions = np.zeros(n_jobs, dtype=np.int64)
        self.job_racks = np.ones(n_jobs, dtype=np.int64)
        self.job_sns = np.ones(n_jobs, dtype=np.int64)
        self.job_active = np.ones(n_jobs, dtype=bool)  # traffic share > 0
        self.job_cards: list[np.ndarray] = [np.empty(0, np.int64) for _ in range(n_jobs)]
        # Services.
        self.svc_cards: list[np.ndarray] = [np.empty(0, np.int64) for _ in range(n_services)]
        self.svc_share = np.ones(n_services)
        self.svc_hit = np.zeros(n_services)  # EMA of prefix-cache hit ratio
        self.svc_new_replicas = np.zeros(n_services, dtype=np.int64)
        self.svc_low_since = np.full(n_services, np.nan)  # start of low demand (cooldown)
        self.caches: list[Any] = []
        self.dram_caches: list[Any] = []
        self.cache_seq = 0
        self.prefix_pending = 0.0
        self.prefix_last: dict[str, np.ndarray] | None = None
        self.last_latency: dict[str, np.ndarray] | None = None
        # Cumulative counters.
        self.counters: dict[str, float] = {
            "preemptions": 0,
            "resizes": 0,
            "drains": 0,
            "lost_flops": 0.0,
            "restarts": 0,
            "card_failures": 0,
            "link_failures": 0,
            "lost_samples": 0.0,
            "completed_jobs": 0,
            "kv_lookups": 0,
            "kv_hits": 0,
            "kv_evictions": 0.0,
            "kv_alloc_failures": 0.0,
            "kv_offload_bytes": 0.0,
            "kv_onload_bytes": 0.0,
            "failovers": 0,
            "energy_joules": 0.0,
            "requests": 0.0,
        }
        self.summary: dict[str, float] = {}
        self.pool: dict[str, np.ndarray] = {}


# --- serialisation ------------------------------------------------------------------------
# Format 2 (written): MAGIC + b"\x02" + zlib(npz). The npz holds every NumPy array of the
# state under a generated name plus ``__manifest__``: UTF-8 JSON of the scenario and the state
# tree, where arrays are ``{"$nd": name}`` and the few non-JSON values are tagged
# (``$tuple``, ``$dict`` for non-string keys, ``$odict``, ``$random``, ``$npgen``, ``$np``
# scalars, ``$obj`` for the cache classes listed in ``_CLASSES``). Loading needs no pickle and
# runs no code from the data; anything else in a state is refused when *saving*, naming the
# field, so the format only changes on purpose (bump FORMAT_VERSION and keep a reader).
# Format 1 (read only): zlib(pickle), written before 2026-11; read through an unpickler that
# admits only NumPy arrays, RNG states and the engine's cache classes.


def _classes() -> dict[str, type]:
    from .memory.cache import LRUCache, LRUKCache

    return {"LRUCache": LRUCache, "LRUKCache": LRUKCache}


_PLAIN = (int, float, str, bool, type(None))


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
        return [_encode(v, arrays, f"{path}[{i}]") for i, v in enumerate(value)]
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


def dump(scenario_dict: dict, state: EngineState) -> bytes:
    """Serialise scenario + state to the versioned byte format (format 2, no pickle)."""
    arrays: dict[str, np.ndarray] = {}
    tree = _encode(state.__dict__, arrays, "state")
    manifest = json.dumps({"version": FORMAT_VERSION, "scenario": scenario_dict, "state": tree})
    buffer = io.BytesIO()
    np.savez(buffer, __manifest__=np.frombuffer(manifest.encode(), dtype=np.uint8), **arrays)
    return MAGIC + bytes([FORMAT_VERSION]) + zlib.compress(buffer.getvalue(), 3)


def load(data: bytes) -> tuple[dict, EngineState]:
    """Inverse of :func:`dump`; reads formats 1 and 2; ``ValueError`` naming the problem on
    foreign, corrupt or newer data."""
    if not isinstance(data, (bytes, bytearray)) or not data.startswith(MAGIC):
        raise ValueError("state: not an engine state (bad magic)")
    version = data[len(MAGIC)]
    try:
        body = zlib.decompress(bytes(data[len(MAGIC) + 1 :]))
    except zlib.error as exc:
        raise ValueError(f"state: corrupt (format {version}): {exc}") from None
    if version == 1:
        payload = _LegacyUnpickler(io.BytesIO(body)).load()
        scenario, fields = payload["scenario"], payload["state"]
    elif version == FORMAT_VERSION:
        with np.load(io.BytesIO(body), allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
        manifest = json.loads(arrays.pop("__manifest__").tobytes().decode())
        scenario, fields = manifest["scenario"], _decode(manifest["state"], arrays)
    else:
        raise ValueError(
            f"state: format version {version} is newer than this engine reads "
            f"(1–{FORMAT_VERSION}); upgrade the portal or reset the run"
        )
    st = EngineState.__new__(EngineState)
    st.__dict__.update(fields)
    return scenario, st


class _LegacyUnpickler(pickle.Unpickler):
    """Format 1 reader: only the globals an engine state of that format contains."""

    ALLOWED = {
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"),
        ("numpy", "ndarray"),
        ("numpy.core.numeric", "_frombuffer"),
        ("numpy._core.numeric", "_frombuffer"),
        ("numpy", "dtype"),
        ("numpy.random._pickle", "__randomstate_ctor"),
        ("numpy.random._pickle", "__generator_ctor"),
        ("numpy.random._pickle", "__bit_generator_ctor"),
        ("numpy.random._pcg64", "PCG64"),
        ("numpy.random.bit_generator", "SeedSequence"),
        ("numpy.random.bit_generator", "__pyx_unpickle_SeedSequence"),
        ("random", "Random"),
        ("collections", "OrderedDict"),
        ("copyreg", "_reconstructor"),
        ("builtins", "object"),
    }

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in self.ALLOWED:
            return super().find_class(module, name)
        if module.endswith("engine.memory.cache") and name in _classes():
            return _classes()[name]
        raise ValueError(
            f"state: format 1 data names {module}.{name}, which an engine state never holds; "
            "reset the run"
        )
