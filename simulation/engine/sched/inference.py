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
* Prefill is chunked (:mod:`..serving.chunked`, vLLM / SGLang token budget): a request's
  prefill costs its chunk work plus the decode steps its chunks share. TTFT = queueing wait +
  that prefill + one decode step; TPOT = decode step time at the replica's occupancy,
  stretched by the share of replica time spent on prefill chunks. The TPOT tail comes from
  the occupancy tail (Poisson number in service, capped at the batch limit).
* Replicas: enough for the slot occupancy target *and* for the prefill share of a replica's
  time to stay below the same target (headroom on the token budget, not only on slots).
* The batch limit is also capped at the largest batch whose TPOT meets the service's TPOT SLO
  (what an operator sets ``max_num_seqs`` to); waiting uses :func:`..perf.queueing.step_tails`
  with the backlog carried from the previous step; requests time out after ``timeout_s``.
* SLO attainment = share of requests meeting both the TTFT and the TPOT target (the targets
  are scenario inputs, never derived from the model).
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from ..catalog import HardwareSpec, get_model
from ..perf.fabric import DTYPE_BYTES
from ..perf.inference import decode_seconds_per_token, kv_replication, prefill_seconds
from ..perf.queueing import _phi, step_tails
from ..scenario.types import InferenceService, Policy
from ..serving.chunked import CHUNK_TOKENS, chunk_constants, prefill_work


class ServiceTable:
    """Static per-service arrays derived from the scenario (not part of saved state)."""

    def __init__(
        self,
        services: list[InferenceService],
        hw: HardwareSpec,
        policy: Policy,
        profile: str = "current",
    ) -> None:
        self.n = len(services)
        self.profile = profile  # serving-stack constants (perf/profiles.py)
        self.names = [s.name for s in services]
        self.tenants = [s.tenant for s in services]
        self.model_ids = [s.model for s in services]
        models = [get_model(s.model) for s in services]
        f = np.array
        self.hw = hw
        dtype = [getattr(s, "weight_dtype", "bf16") for s in services]
        wbytes = f([DTYPE_BYTES[d] for d in dtype], dtype=float)
        self.dtype = dtype
        self.m = SimpleNamespace(
            params=f([m.params for m in models], dtype=float),
            active_params=f([m.active for m in models], dtype=float),
            layers=f([m.layers for m in models], dtype=float),
            attention_width=f([m.attention_width for m in models], dtype=float),
            hidden=f([m.hidden for m in models], dtype=float),
            weight_bytes=f([m.params for m in models], dtype=float) * wbytes,
            kv_bytes_per_token=f([m.kv_bytes_per_token for m in models], dtype=float),
            kv_heads=f([m.kv_heads for m in models], dtype=float),
            kv_lora_rank=f([m.kv_lora_rank for m in models], dtype=float),
            heads=f([m.heads for m in models], dtype=float),  # MLA decode attention width
            qk_rope_head_dim=f([m.qk_rope_head_dim for m in models], dtype=float),
            moe_layers=f([m.moe_layers for m in models], dtype=float),
            n_experts=f([m.n_experts for m in models], dtype=float),
            experts_per_token=f([m.experts_per_token for m in models], dtype=float),
            moe_intermediate=f([m.moe_intermediate for m in models], dtype=float),
            mtp_layers=f([m.mtp_layers for m in models], dtype=float),
        )
        self.tp_attn = f([s.tp for s in services], dtype=np.int64)
        self.ep = f([max(getattr(s, "ep", 1), 1) for s in services], dtype=np.int64)
        self.slo_tpot_s = f([getattr(s, "slo_tpot_ms", 100.0) for s in services]) / 1e3
        self.timeout_s = f([getattr(s, "timeout_s", 300.0) for s in services], dtype=float)
        self.pending = np.zeros(len(services))  # backlog hint for autoscaling (set by engine)
        self.tp = np.maximum(self.tp_attn, self.ep)  # cards per replica
        self.mean_rate = f([s.mean_rate_rps for s in services], dtype=float)
        r = f([s.peak_to_trough for s in services], dtype=float)
        self.amplitude = (r - 1.0) / (r + 1.0)  # cosine amplitude giving that peak/trough
        self.peak_hour = f([s.peak_hour for s in services], dtype=float)
        # On/off services (issue 25): requests only inside a daily window; the cosine is
        # rescaled there so the daily mean rate stays ``mean_rate`` (always-on: factor 1).
        self.on_hours = f([getattr(s, "on_hours", 24.0) for s in services], dtype=float)
        self.on_start = f([getattr(s, "on_start_hour", 0.0) for s in services], dtype=float)
        self.reserved = f([getattr(s, "reserved_replicas", 0) for s in services], dtype=np.int64)
        self.on_norm = np.ones(self.n)
        grid = (np.arange(1440) + 0.5) / 60.0
        day = self._shape(grid[:, None])  # (1440, n) before normalisation
        onoff = self.on_hours < 24.0
        self.on_norm[onoff] = 1.0 / np.maximum(day[:, onoff].mean(axis=0), 1e-12)
        self.peak_multiplier = np.where(
            onoff, (day * self.on_norm).max(axis=0), 1.0 + self.amplitude
        )
        self.ca2 = f([s.arrival_cv for s in services], dtype=float) ** 2
        self.prompt = f([s.prompt_tokens_mean for s in services], dtype=float)
        self.output = f([s.output_tokens_mean for s in services], dtype=float)
        self.prefix_share = f([s.prefix_share for s in services], dtype=float)
        self.core = f([s.criticality == "core" for s in services], dtype=bool)
        self.slo_p99_s = f([s.slo_p99_ms for s in services], dtype=float) / 1e3
        self.slo_ttft_s = f([s.slo_ttft_ms for s in services], dtype=float) / 1e3
        self.min_replicas = f([s.min_replicas for s in services], dtype=np.int64)
        self.max_replicas = f([getattr(s, "max_replicas", 0) for s in services], dtype=np.int64)
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
        # Chunked prefill (per service): marginal seconds per prompt token of a full chunk and
        # the one-token pass every iteration pays anyway.
        self.chunk_t_tok, self.chunk_w1 = chunk_constants(
            lambda k: self._prefill(np.full(self.n, k))
        )
        # KV bytes a replica stores per token: a KV head on more cards than there are KV heads
        # (or MLA's latent under tp > 1) is stored on each of them (perf.inference).
        self.kv_stored_per_token = self.m.kv_bytes_per_token * kv_replication(self.m, self.tp_attn)
        seq_kv = self.context * self.kv_stored_per_token
        fit = np.floor(kv_room / seq_kv).astype(np.int64)
        self.batch = np.maximum(1, np.minimum(f([s.max_batch for s in services]), fit))
        # Operator batch cap: the largest occupancy whose TPOT (decode step stretched by the
        # prefills admitted at that occupancy) meets the TPOT SLO, cold prefix cache.
        ok = np.ones(self.n, dtype=np.int64)
        zero = np.zeros(self.n)
        for n in range(1, int(self.batch.max()) + 1):
            _, s1 = self.times(zero, np.full(self.n, float(n)))
            good = (s1 / np.maximum(self.output, 1.0) <= self.slo_tpot_s) & (n <= self.batch)
            ok = np.where(good, n, ok)
        self.batch = np.maximum(1, np.minimum(self.batch, ok))
        # Rank for allocation: core first, then by index (stable, deterministic).
        self.order = np.lexsort((np.arange(self.n), ~self.core))

    def set_lengths(self, prompt: float, output: float) -> None:
        """Per-step mean lengths (trace replay); arrays are updated in place."""
        self.prompt[:] = prompt
        self.output[:] = output
        self.context[:] = self.prompt + 0.5 * self.output

    # -- demand ---------------------------------------------------------------------
    def _shape(self, hour_of_day: float) -> np.ndarray:
        cos = 1.0 + self.amplitude * np.cos(2.0 * np.pi * (hour_of_day - self.peak_hour) / 24.0)
        on = ((hour_of_day - self.on_start) % 24.0 < self.on_hours) | (self.on_hours >= 24.0)
        return np.where(on, cos, 0.0)

    def diurnal(self, hour_of_day: float) -> np.ndarray:
        """Day curve per service, mean 1 over a day: a cosine, zero outside an on/off
        service's window."""
        return self._shape(hour_of_day) * self.on_norm

    # -- service times --------------------------------------------------------------
    def times(self, hit: np.ndarray, batch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(prefill s0, mean decode time s1) per request at the given occupancy ``batch``.

        Includes the prefill interference of that occupancy: with ``n`` sequences in flight
        a replica admits ``n / E[S]`` requests/s whose prefills stall decoding for a share
        ``n s0 / E[S]`` of its time, so ``E[S] = s0 + out tpot / (1 - n s0 / E[S])``, the
        larger root of ``x^2 - x (s0 (1 + n) + out tpot) + n s0^2 = 0``.
        """
        s0, tpot = self.phase_times(hit, batch)
        n = np.maximum(np.asarray(batch, dtype=float), 1.0)
        d = self.output * tpot
        bq = s0 * (1.0 + n) + d
        es = 0.5 * (bq + np.sqrt(np.maximum(bq * bq - 4.0 * n * s0 * s0, 0.0)))
        return s0, es - s0

    def phase_times(self, hit: np.ndarray, batch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(prefill seconds, decode step seconds) at occupancy ``batch`` per replica.

        Prefill is chunked: its work on top of the decode steps plus the decode steps of the
        iterations its chunks ride in (``tokens / CHUNK_TOKENS`` of them, fractional: short
        prompts share an iteration). The same figure stands for the prefill's share of the
        replica's time (it slightly over-counts: the shared iterations also decode).
        """
        tokens = np.maximum(self.prompt * (1.0 - hit), 1.0)
        dec = self._decode(np.maximum(batch, 1.0))
        work = prefill_work(tokens, self._prefill(tokens), self.chunk_t_tok, self.chunk_w1)
        return work + tokens / CHUNK_TOKENS * dec, dec

    # The perf model is a pure function of the static tables and these inputs, and one step
    # asks it the same questions several times (the prefill of the step's prompts for every
    # occupancy tried, the decode step at the batch cap every step): a small memo returns
    # the very arrays it computed (issue 35 item 7: ~1/4 of a step's time).
    _MEMO_ENTRIES = 64
    MEMO_FIELDS = ("_memo_table", "_parts")  # not state: rebuilt as a run goes

    def _dtype_parts(self) -> list[tuple[str, np.ndarray, SimpleNamespace]]:
        parts = self.__dict__.get("_parts")
        if parts is None:
            parts = []
            for d in sorted(set(self.dtype)):
                sel = np.array([x == d for x in self.dtype])
                sub = SimpleNamespace(**{k: v[sel] for k, v in vars(self.m).items()})
                parts.append((d, sel, sub))
            self._parts = parts
        return parts

    def _memo(self, key: tuple, compute) -> np.ndarray:
        memo = self.__dict__.setdefault("_memo_table", {})
        out = memo.get(key)
        if out is None:
            if len(memo) >= self._MEMO_ENTRIES:
                memo.clear()
            out = memo[key] = compute()
        return out.copy()

    def _prefill(self, tokens):
        tokens = np.asarray(tokens, dtype=float)
        return self._memo(("prefill", tokens.tobytes()), lambda: self._prefill_raw(tokens))

    def _prefill_raw(self, tokens):
        out = np.empty(self.n)
        for d, sel, sub in self._dtype_parts():
            out[sel] = prefill_seconds(
                sub,
                self.hw,
                self.tp_attn[sel],
                tokens[sel],
                ep=self.ep[sel],
                dtype=d,
                profile=self.profile,
            )
        return out

    def _decode(self, batch):
        batch = np.asarray(batch, dtype=float)
        key = ("decode", batch.tobytes(), self.context.tobytes())
        return self._memo(key, lambda: self._decode_raw(batch))

    def _decode_raw(self, batch):
        out = np.empty(self.n)
        for d, sel, sub in self._dtype_parts():
            out[sel] = decode_seconds_per_token(
                sub,
                self.hw,
                self.tp_attn[sel],
                batch[sel],
                self.context[sel],
                ep=self.ep[sel],
                dtype=d,
                profile=self.profile,
            )
        return out

    def target_replicas(
        self, lam: np.ndarray, hit: np.ndarray, target_util: np.ndarray
    ) -> np.ndarray:
        """Replicas so that slot occupancy stays at ``target_util`` (the SLO headroom), and
        the prefill share of each replica's time too (a prompt-heavy service, e.g. code
        completion, saturates its token budget long before its slots).

        A backlog left by the previous step (``self.pending``) is added as demand to drain over
        five minutes, so capacity follows demand rather than the other way round. A service
        with ``max_replicas`` stops there (``min_replicas == max_replicas``: pinned capacity).
        """
        lam = lam + self.pending / 300.0
        s0, s1 = self.times(hit, self.batch * target_util)
        slots = lam * (s0 + s1) / target_util
        need = np.ceil(slots / self.batch - 1e-9).astype(np.int64)
        need = np.maximum(need, np.ceil(lam * s0 / target_util - 1e-9).astype(np.int64))
        need = np.maximum(
            need, np.where(lam > 0, np.maximum(self.min_replicas, 1), self.min_replicas)
        )
        # An operator ceiling (``max_replicas``): past it the backlog queues and times out.
        return np.where(self.max_replicas > 0, np.minimum(need, self.max_replicas), need)

    def latency(
        self,
        lam: np.ndarray,
        replicas: np.ndarray,
        hit: np.ndarray,
        dt: float,
        backlog: np.ndarray | None = None,
    ) -> dict[str, np.ndarray]:
        """TTFT / TPOT / end-to-end tails, throughput, SLO attainment per service for a step."""
        rep = np.maximum(replicas, 0.0)
        backlog = np.zeros(self.n) if backlog is None else np.asarray(backlog, dtype=float)
        lam_rep = (lam + backlog / dt) / np.maximum(rep, 1e-9)
        # Occupancy per replica sets the decode batch; iterate since times depend on it.
        b = np.full(self.n, 1.0)
        for _ in range(3):
            s0, tpot0 = self.phase_times(hit, b)
            u_pre = np.clip(lam_rep * s0, 0.0, 0.9)  # replica time spent on prefills
            tpot = tpot0 / (1.0 - u_pre)
            b = np.clip(lam_rep * (s0 + self.output * tpot), 1.0, self.batch)
        s0, tpot0 = self.phase_times(hit, b)
        u_pre = np.clip(lam_rep * s0, 0.0, 0.9)
        tpot = tpot0 / (1.0 - u_pre)
        s1 = self.output * tpot
        es = s0 + s1
        servers = np.floor(rep * self.batch)
        cs2 = (s1 / es) ** 2  # exponential output lengths
        q = step_tails(lam, servers, es, cs2, self.ca2, backlog, dt, self.timeout_s)
        # TPOT tail from the occupancy tail (Poisson in service, capped at the batch limit).
        _, tpot_b = self.phase_times(hit, np.minimum(self.batch, b + 2.326 * np.sqrt(b)))
        tpot99 = np.maximum(tpot_b / (1.0 - u_pre), tpot)
        first = s0 + tpot
        ttft50 = first + q.wait_quantile(0.5)
        ttft99 = first + q.wait_quantile(0.99)
        e2e50 = first + q.wait_quantile(0.5) + (self.output - 1.0) * tpot * math.log(2.0)
        e2e99 = first + q.wait_quantile(0.99) + np.maximum(self.output - 1.0, 0.0) * tpot99 * 4.6
        # SLO attainment: P(TTFT <= target) x P(TPOT <= target).
        ok_ttft = q.wait_cdf(self.slo_ttft_s - first)
        t1 = tpot0 / (1.0 - u_pre)
        _, tmax = self.phase_times(hit, self.batch.astype(float))
        slope = (tmax / (1.0 - u_pre) - tpot) / np.maximum(self.batch - b, 1e-9)
        n_star = np.where(slope > 0, b + (self.slo_tpot_s - t1) / np.maximum(slope, 1e-12), 1e9)
        ok_tpot = np.where(
            n_star >= self.batch, 1.0, _phi((n_star + 0.5 - b) / np.sqrt(np.maximum(b, 1e-9)))
        )
        ok_tpot = np.where(self.slo_tpot_s >= t1, ok_tpot, 0.0)
        offered = lam * dt + backlog
        done_share = np.where(offered > 0, 1.0 - q.timeouts / np.maximum(offered, 1e-12), 1.0)
        attain = np.where(lam > 0, ok_ttft * ok_tpot * done_share, 1.0)
        served = q.served
        inflight = served * (es + q.mean_wait)
        per_replica = inflight / np.maximum(rep, 1e-9)
        tokens_s = served * (self.output + self.prompt)
        flops = served * 2.0 * self.m.active_params * (self.output + self.prompt * (1.0 - hit))
        rho = np.where(np.isfinite(q.rho), q.rho, 0.0)
        return {
            "lam": lam,
            "served": served,
            "rho": rho,
            "p50": e2e50,
            "p99": e2e99,
            "e2e_p99": e2e99,
            "ttft_p50": ttft50,
            "ttft_p99": ttft99,
            "tpot_p50": tpot,
            "tpot_p99": tpot99,
            "attainment": attain,
            "backlog": q.backlog,
            "timeouts": q.timeouts,
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
