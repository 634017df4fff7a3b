"""Vectorised inference-service model: demand curve, replica sizing and per-step latency.

All services of a scenario are held as NumPy arrays (one entry per service) so a step costs a
handful of array operations plus one Erlang C evaluation per service.

Modelling choices (approximations, documented in the README):
* A replica with continuous batching is ``max_batch`` queue servers; ``max_batch`` is capped by
  how many average-length sequences fit in the replica's KV memory.
* A request holds a slot for ``prefill + output_tokens x time_per_output_token(batch)``; the
  batch size used for TPOT is the slot occupancy, so batching raises throughput but slows each
  token a little (bandwidth: weights are read once per step, KV per sequence).
* Prefix-cache hits remove the cached fraction of the prompt from prefill.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from ..catalog import HardwareSpec, get_model
from ..perf.inference import decode_seconds_per_token, prefill_seconds
from ..perf.queueing import ggc_latency
from ..scenario.types import InferenceService, Policy


class ServiceTable:
    """Static per-service arrays derived from the scenario (not part of saved state)."""

    def __init__(self, services: list[InferenceService], hw: HardwareSpec, policy: Policy) -> None:
        self.n = len(services)
        self.names = [s.name for s in services]
        self.tenants = [s.tenant for s in services]
        self.model_ids = [s.model for s in services]
        models = [get_model(s.model) for s in services]
        f = np.array
        self.hw = hw
        self.m = SimpleNamespace(
            params=f([m.params for m in models], dtype=float),
            layers=f([m.layers for m in models], dtype=float),
            attention_width=f([m.attention_width for m in models], dtype=float),
            hidden=f([m.hidden for m in models], dtype=float),
            weight_bytes=f([m.weight_bytes for m in models], dtype=float),
            kv_bytes_per_token=f([m.kv_bytes_per_token for m in models], dtype=float),
        )
        self.tp = f([s.tp for s in services], dtype=np.int64)
        self.mean_rate = f([s.mean_rate_rps for s in services], dtype=float)
        r = f([s.peak_to_trough for s in services], dtype=float)
        self.amplitude = (r - 1.0) / (r + 1.0)  # cosine amplitude giving that peak/trough
        self.peak_hour = f([s.peak_hour for s in services], dtype=float)
        self.ca2 = f([s.arrival_cv for s in services], dtype=float) ** 2
        self.prompt = f([s.prompt_tokens_mean for s in services], dtype=float)
        self.output = f([s.output_tokens_mean for s in services], dtype=float)
        self.prefix_share = f([s.prefix_share for s in services], dtype=float)
        self.core = f([s.criticality == "core" for s in services], dtype=bool)
        self.slo_p99_s = f([s.slo_p99_ms for s in services], dtype=float) / 1e3
        self.slo_ttft_s = f([s.slo_ttft_ms for s in services], dtype=float) / 1e3
        self.min_replicas = f([s.min_replicas for s in services], dtype=np.int64)
        self.context = self.prompt + 0.5 * self.output  # mean KV context while decoding
        self.weights_per_card = self.m.weight_bytes / np.maximum(self.tp, 1)
        # KV room per replica when the framework reserves a fixed fraction of HBM (vLLM style).
        kv_room = self.tp * hw.hbm_bytes * policy.reserve_fraction_split - self.m.weight_bytes
        for i, s in enumerate(services):
            if kv_room[i] <= 0:
                need = math.ceil(
                    self.m.weight_bytes[i] / (hw.hbm_bytes * policy.reserve_fraction_split)
                )
                raise ValueError(
                    f"InferenceService {s.name!r}: field 'tp' too small: {s.model} weights do "
                    f"not fit on {s.tp} x {hw.id} (need tp >= {need})"
                )
        self.kv_room_per_replica = kv_room
        seq_kv = self.context * self.m.kv_bytes_per_token
        fit = np.floor(kv_room / seq_kv).astype(np.int64)
        self.batch = np.maximum(1, np.minimum(f([s.max_batch for s in services]), fit))
        # Rank for allocation: core first, then by index (stable, deterministic).
        self.order = np.lexsort((np.arange(self.n), ~self.core))

    # -- demand ---------------------------------------------------------------------
    def diurnal(self, hour_of_day: float) -> np.ndarray:
        """Cosine day curve per service, mean 1 over a day."""
        return 1.0 + self.amplitude * np.cos(2.0 * np.pi * (hour_of_day - self.peak_hour) / 24.0)

    # -- service times --------------------------------------------------------------
    def times(self, hit: np.ndarray, batch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(prefill s0, mean decode time s1) per request at the given occupancy ``batch``."""
        tokens = np.maximum(self.prompt * (1.0 - hit), 1.0)
        s0 = prefill_seconds(self.m, self.hw, self.tp, tokens)
        tpot = decode_seconds_per_token(
            self.m, self.hw, self.tp, np.maximum(batch, 1.0), self.context
        )
        return s0, self.output * tpot

    def target_replicas(
        self, lam: np.ndarray, hit: np.ndarray, target_util: np.ndarray
    ) -> np.ndarray:
        """Replicas so that slot occupancy stays at ``target_util`` (the SLO headroom)."""
        s0, s1 = self.times(hit, self.batch * target_util)
        slots = lam * (s0 + s1) / target_util
        need = np.ceil(slots / self.batch - 1e-9).astype(np.int64)
        return np.maximum(
            need, np.where(lam > 0, np.maximum(self.min_replicas, 1), self.min_replicas)
        )

    def latency(
        self, lam: np.ndarray, replicas: np.ndarray, hit: np.ndarray, dt: float
    ) -> dict[str, np.ndarray]:
        """Latency, throughput and SLO attainment per service for one step."""
        rep = np.maximum(replicas, 0.0)
        # Occupancy per replica sets the decode batch; iterate once since times depend on it.
        b = np.full(self.n, 1.0)
        for _ in range(2):
            s0, s1 = self.times(hit, b)
            occ = lam * (s0 + s1) / np.maximum(rep, 1e-9)
            b = np.clip(occ, 1.0, self.batch)
        s0, s1 = self.times(hit, b)
        servers = np.floor(rep * self.batch)
        q = ggc_latency(lam, np.maximum(servers, 1), s0, s1, self.ca2)
        es = s0 + s1
        rho = np.where(
            servers > 0, lam * es / np.maximum(servers, 1), np.where(lam > 0, np.inf, 0.0)
        )
        sat = rho >= 0.999
        # Saturated queues grow through the step: a request waits on average half the backlog.
        backlog_wait = np.where(np.isfinite(rho), (1.0 - 1.0 / np.maximum(rho, 1.0)) * dt / 2, dt)
        tpot = s1 / np.maximum(self.output, 1.0)
        p50 = np.where(sat, es + backlog_wait, q.p50)
        p99 = np.where(sat, es + 2 * backlog_wait, q.p99)
        ttft = np.where(sat, s0 + 2 * backlog_wait, q.ttft_p99 + s0 + tpot)
        ok_lat = np.where(sat, 0.0, 1.0 - q.survival(self.slo_p99_s))
        ok_ttft = np.where(sat, 0.0, 1.0 - q.ttft_survival(self.slo_ttft_s - tpot, s0))
        attain = np.where(lam > 0, np.minimum(ok_lat, ok_ttft), 1.0)
        served = np.where(sat, np.where(np.isfinite(rho), lam / np.maximum(rho, 1.0), 0.0), lam)
        inflight = served * (es + np.where(sat, backlog_wait, q.mean_wait))
        per_replica = inflight / np.maximum(rep, 1e-9)
        tokens_s = served * (self.output + self.prompt)
        flops = served * 2.0 * self.m.params * (self.output + self.prompt * (1.0 - hit))
        return {
            "lam": lam,
            "served": served,
            "rho": np.where(np.isfinite(rho), rho, 0.0),
            "p50": p50,
            "p99": p99,
            "ttft_p99": ttft,
            "attainment": attain,
            "tokens_per_s": tokens_s,
            "output_tokens_per_s": served * self.output,
            "flops": flops,
            "inflight": inflight,
            # Card busy ratio: chance a replica has at least one request in flight (M/G/inf).
            "busy": np.where(rep > 0, 1.0 - np.exp(-per_replica), 0.0),
            "s0": s0,
            "s1": s1,
            "batch": b,
        }
