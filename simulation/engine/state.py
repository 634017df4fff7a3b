"""Mutable engine state and its versioned, compact serialisation.

Everything that changes while the engine runs lives in :class:`EngineState` as plain Python
data, NumPy arrays and the cache objects; static tables are rebuilt from the scenario on load.
The byte format is ``MAGIC + version (1 byte) + zlib(pickle({...}))``: pickle keeps NumPy arrays
and RNG states exact (bit-identical continuation), zlib keeps a 10k-card state small.
"""

from __future__ import annotations

import pickle
import zlib
from typing import Any

import numpy as np

MAGIC = b"CPTWIN"
FORMAT_VERSION = 1


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


def dump(scenario_dict: dict, state: EngineState) -> bytes:
    """Serialise scenario + state to the versioned byte format."""
    payload = {"version": FORMAT_VERSION, "scenario": scenario_dict, "state": state.__dict__}
    return (
        MAGIC
        + bytes([FORMAT_VERSION])
        + zlib.compress(pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL), 3)
    )


def load(data: bytes) -> tuple[dict, EngineState]:
    """Inverse of :func:`dump`; ``ValueError`` on foreign or newer data."""
    if not isinstance(data, (bytes, bytearray)) or not data.startswith(MAGIC):
        raise ValueError("state: not an engine state (bad magic)")
    version = data[len(MAGIC)]
    if version != FORMAT_VERSION:
        raise ValueError(f"state: unsupported format version {version} (expected {FORMAT_VERSION})")
    payload = pickle.loads(zlib.decompress(bytes(data[len(MAGIC) + 1 :])))
    st = EngineState.__new__(EngineState)
    st.__dict__.update(payload["state"])
    return payload["scenario"], st
