"""Request-level serving: each step, a sample of that step's requests goes through replica queues.

The analytic model (:mod:`..sched.inference`) keeps sizing replicas, carrying the fluid backlog
and counting throughput; the *latency figures* of a step come from here:

* **Requests.** In a replay, the trace rows that arrive in the step (their own timestamps,
  prompt and output lengths, and for Mooncake their 512-token ``hash_ids``); otherwise arrivals
  drawn as a renewal process with the service's arrival CV and lengths drawn log-normally
  around the service's means (:data:`PROMPT_SIGMA`, :data:`OUTPUT_SIGMA`, assumptions).
* **Routing.** The sample is a group of ``m`` of the service's replicas (as many as fit in
  :data:`SAMPLE_REQUESTS` requests per step, :data:`REPLAY_SAMPLE_REQUESTS` for a replay's
  service; one replica over the first part of the step when a single replica alone receives
  more). The group receives a random ``m / replicas`` share of the requests and routes each to
  the less loaded of two random replicas (fewest outstanding requests: power-of-two choices,
  Envoy's ``LEAST_REQUEST`` default, as gateways in front of LLM replicas run it). The sample
  size is reported per service (``sample_size``).
* **Per-replica queue** (continuous batching, chunked prefill, :mod:`.chunked`): ``batch``
  slots (the operator's ``max_num_seqs``); a request waits for a slot, then its prompt's
  chunks queue FCFS in the replica's per-iteration token budget, interleaved with the
  running decodes (a long prompt no longer stops them); its first token comes with its last
  chunk; it then decodes ``output - 1`` tokens at the decode step of the replica's occupancy
  when it started, stretched by the share of the replica's time its prefill chunks take. A
  request whose slot wait would exceed ``timeout_s`` times out (an SLO miss).
* **Warm start.** A replica starts the step with the analytic model's occupancy in flight
  (residual service uniform over a mean service time) and the carried backlog ahead of the
  step's arrivals (every slot busy for ``backlog x E[S] / slots``), so waits carry over.
* **Prefix cache per request.** Mooncake rows look up their own block ids, in arrival order,
  in the service's exact LRU / LRU-K cache at the pool's real capacity (every row of the step,
  not only the sampled ones); a request skips prefill for its leading cached blocks. Otherwise
  a request finds its shared prefix cached with the probability the sampled cache measures.

TTFT / TPOT / end-to-end P50 and P99 and SLO attainment (TTFT and TPOT targets met, not timed
out) are quantiles of the sampled requests. Each sampled request also adds its weight
(``requests in the step / sample size``) to run-level histograms, so a run's P99 is a quantile
of the pooled requests, not a mean of per-step quantiles.
"""

from __future__ import annotations

import math
from bisect import bisect_right, insort
from types import SimpleNamespace
from typing import TYPE_CHECKING

import numpy as np

from ..catalog import get_model
from ..perf.inference import decode_seconds_per_token, prefill_seconds
from ..serving_histograms import STEP_HISTOGRAMS
from .chunked import CHUNK_TOKENS, constants_from, prefill_work
from .readout import HIST_EDGES, HIST_KEYS, pooled_quantile, record

if TYPE_CHECKING:  # annotations only
    from ..state import EngineState
    from ..world import World

SAMPLE_REQUESTS = 64  # measured requests per service per step (upper bound; step cost)
# A replay drives one service: its sample can cover the whole step at high rate scales (a
# sample cut to the step's first seconds would miss the queue building up over the step).
REPLAY_SAMPLE_REQUESTS = 1024
# Log-normal shape of synthetic prompt / output lengths (sigma of log). Assumption: near the
# spread of public chat traces (a replay uses the trace's own lengths instead).
PROMPT_SIGMA = 0.8
OUTPUT_SIGMA = 0.9
BLOCK_TOKENS = 512  # Mooncake block size (traces.MOONCAKE_BLOCK_TOKENS)
_LENGTH_SIGMA = np.array([[PROMPT_SIGMA], [OUTPUT_SIGMA]])
_LENGTH_SHIFT = 0.5 * _LENGTH_SIGMA**2  # mean-preserving log-normal


def exact_services(scenario, n: int) -> np.ndarray:
    """Services whose prefix cache is looked up exactly, per request (a Mooncake replay).

    The trace drives service 0 (:func:`..replay.apply_replay` replaces the services with one).
    """
    rows = (scenario.replay or {}).get("requests") or {}
    out = np.zeros(n, dtype=bool)
    if rows.get("hash_ids") is not None and n:
        out[0] = True
    return out


class RequestSource:
    """Static trace rows of a replay (rebuilt from the scenario on load, never saved)."""

    def __init__(self, rows: dict | None) -> None:
        self.t = np.asarray(rows["t"], dtype=float) if rows else np.empty(0)
        self.prompt = np.asarray(rows["prompt"], dtype=float) if rows else np.empty(0)
        self.output = np.asarray(rows["output"], dtype=float) if rows else np.empty(0)
        ids = rows.get("hash_ids") if rows else None
        self.hash_ids: list[list[int]] | None = [list(x) for x in ids] if ids else None

    def __bool__(self) -> bool:
        return bool(self.t.size)

    def span(self, t0: float, t1: float) -> tuple[int, int]:
        """Index range of rows arriving in ``[t0, t1)``."""
        return int(np.searchsorted(self.t, t0, "left")), int(np.searchsorted(self.t, t1, "left"))


def simulate_group(
    arr: list[float],
    work: list[float],
    tokens: list[float],
    output: list[float],
    dec: list[float],
    stretch: float,
    slots0: list[list[float]],
    pf_free: float,
    timeout_s: float,
    pick: list[tuple[int, int]] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Replicas behind one router, chunked prefill: (ttft, tpot, e2e, timed_out) per request.

    ``slots0[r]`` are the times replica ``r``'s ``len(dec)`` slots free up; ``dec[n-1]`` the
    decode step at occupancy ``n``; ``stretch`` = ``1 / (1 - prefill share)``, the mean
    slowdown of a token by the chunks sharing its iterations. A request goes to the less
    loaded of its two candidates ``pick[i]`` (fewest requests outstanding, Envoy's
    ``LEAST_REQUEST`` with two choices), waits for a slot, then its prompt's chunks queue
    FCFS in that replica's token budget (:mod:`.chunked`): ``work + tokens / budget`` decode
    steps of wall time, at least one iteration; the first token comes with its last chunk,
    the rest at the stretched decode step of the occupancy it found.
    """
    m = len(slots0)
    ends = [sorted(x) for x in slots0]
    pf = [pf_free] * m
    c = len(dec)
    n = len(arr)
    # Python lists inside the loop (a NumPy element store costs more than the arithmetic).
    ttft, tpot, e2e = [0.0] * n, [0.0] * n, [0.0] * n
    dead = [False] * n
    per_tok = 1.0 / CHUNK_TOKENS
    for i in range(n):
        a = arr[i]
        r = 0
        if m > 1:
            r1, r2 = pick[i]
            e1, e2 = ends[r1], ends[r2]
            r = r1 if len(e1) - bisect_right(e1, a) <= len(e2) - bisect_right(e2, a) else r2
        e = ends[r]
        f = e[0]
        start = f if f > a else a
        if start - a > timeout_s:
            dead[i] = True
            ttft[i] = e2e[i] = timeout_s
            continue
        del e[0]
        occ = 1 + len(e) - bisect_right(e, start)
        d = dec[min(occ, c) - 1]
        p0 = pf[r] if pf[r] > start else start
        w = work[i]
        done = p0 + w + tokens[i] * per_tok * d
        pf[r] = done
        first = max(done, start + w + d)
        step = d * stretch
        end = first + max(output[i] - 1.0, 0.0) * step
        insort(e, end)
        ttft[i], tpot[i], e2e[i] = first - a, step, end - a
    return np.array(ttft), np.array(tpot), np.array(e2e), np.array(dead, dtype=bool)


class RequestModel:
    """Per-engine request sampler (static tables only; caches live in the engine state)."""

    def __init__(self, w: World) -> None:
        rp = w.scenario.replay or {}
        self.source = RequestSource(rp.get("requests"))
        self.exact = exact_services(w.scenario, w.svc.n)
        self.max_context = [get_model(m).max_context for m in w.svc.model_ids]

    # -- prefix cache (Mooncake rows, exact) ------------------------------------------
    def _lookup(self, w: World, st: EngineState, s: int, lo: int, hi: int, share_ok) -> np.ndarray:
        """Run rows ``lo:hi`` through service ``s``'s exact cache; cached prompt share each."""
        mem = st.memory
        cache = mem.caches[s]
        dram = mem.dram_caches[s] if mem.dram_caches else None
        ids = self.source.hash_ids
        chunk = BLOCK_TOKENS * float(w.svc.kv_stored_per_token[s])
        out = np.zeros(hi - lo)
        h0, l0, e0 = cache.hits, cache.lookups, cache.evictions
        dram_hits = 0
        for j in range(lo, hi):
            if not share_ok[j - lo]:
                continue  # routed elsewhere (traffic share below 1)
            keys = ids[j]
            lead, leading = 0, True
            for k in keys:
                if k not in cache and dram is not None and k in dram:
                    dram_hits += 1
                    cache.hits += 1  # served from the DRAM tier: still a prefix hit
                    cache.lookups += 1
                    cache._insert(k)
                    hit = True
                else:
                    hit = cache.access(k)
                cache.pin(k)
                if leading and hit:
                    lead += 1
                else:
                    leading = False
            for k in keys:
                cache.unpin(k)
            for k in cache.drain_evicted():
                if dram is not None:
                    dram.access(k)
            p = max(self.source.prompt[j], 1.0)
            out[j - lo] = min(lead * BLOCK_TOKENS / p, 1.0 - 1.0 / p)
        if dram is not None:
            dram.drain_evicted()
        dh, dl, de = cache.hits - h0, cache.lookups - l0, cache.evictions - e0
        c = mem.counters
        c["kv_hits"] += dh
        c["kv_lookups"] += dl
        c["kv_evictions"] += de
        c["kv_onload_bytes"] += dram_hits * chunk
        if dram is not None:
            c["kv_offload_bytes"] += de * chunk
        if dl:
            mem.hit[s] = dh / dl
        self.step_hits[s], self.step_lookups[s] = dh, dl
        return out

    # -- one step ---------------------------------------------------------------------
    def apply(
        self,
        w: World,
        st: EngineState,
        lat: dict,
        lam: np.ndarray,
        replicas: np.ndarray,
        dt: float,
        backlog: np.ndarray,
    ) -> None:
        """Replace the step's latency quantiles and attainment in ``lat`` by sampled ones."""
        svc = w.svc
        t0 = st.t - dt  # the engine has already advanced its clock
        rng = np.random.default_rng([w.scenario.seed, st.steps, 0x5E7])
        n = svc.n
        self.step_hits, self.step_lookups = np.zeros(n), np.zeros(n)
        groups: list[dict] = []
        for s in range(n):
            g = self._requests(w, st, s, lam, replicas, t0, dt, rng)
            if g is not None:
                groups.append(g)
        sample = np.zeros(n)
        for key in ("ttft_p50", "ttft_p99", "tpot_p50", "tpot_p99", "p50", "p99"):
            lat[key] = np.array(lat[key], dtype=float)
        lat["attainment"] = np.array(lat["attainment"], dtype=float)
        if groups:
            self._times(w, groups)
        # The step's sampled requests as bucket counts on the export's bounds, each request
        # weighted by the requests it stands for: merged over any window they give a
        # percentile of that window's requests (the snapshot's ``serving_hist``).
        hist = {
            name: np.full((n, len(bounds) + 2), np.nan) for name, bounds in STEP_HISTOGRAMS.items()
        }
        # Simulate every group first (the RNG draws stay in group order), then read all the
        # groups' figures in a few array operations: per-group NumPy calls on ~64 requests
        # were most of the step's serving cost (issue 35 item 7); the arithmetic is the same.
        sims = []
        for g in groups:
            res = self._simulate(w, g, lat, backlog, replicas, rng)
            if res is not None and res[0].size:
                sims.append((g, res))
        if sims:
            record(st, svc, lat, lam, dt, sims, sample, hist)
        lat["e2e_p99"] = lat["p99"]
        lat["serving_hist"] = hist
        lat["sample_size"] = sample
        lat["prefix_hits"], lat["prefix_lookups"] = self.step_hits, self.step_lookups

    def _requests(self, w, st, s, lam, replicas, t0, dt, rng) -> dict | None:
        """The sampled requests of service ``s``: a group of ``m`` of its replicas.

        Returns arrivals (relative to the window start), lengths and cached share of the
        requests the group receives over ``window`` (the whole step unless the group's first
        ``bound`` arrivals end earlier). The group gets each request with probability
        ``m / replicas`` (the router spreads load evenly), then routes inside itself.
        """
        svc = w.svc
        if lam[s] <= 0:
            return None
        reps = float(replicas[s])
        r_int = max(int(math.ceil(reps - 1e-9)), 1)
        if self.source and s == 0:
            bound = REPLAY_SAMPLE_REQUESTS
            lo, hi = self.source.span(t0, t0 + dt)
            if hi <= lo:
                return None
            share = float(st.services.share[s])
            keep = rng.random(hi - lo) < share if share < 1.0 else np.ones(hi - lo, bool)
            if self.exact[s]:
                hit_all = self._lookup(w, st, s, lo, hi, keep)
            else:
                hit_all = np.full(hi - lo, float(st.memory.hit[s]))
            idx = np.flatnonzero(keep)
            if idx.size == 0:
                return None
            m = int(np.clip(bound // max(idx.size / r_int, 1.0), 1, r_int))
            if m < r_int:
                idx = idx[rng.random(idx.size) < m / r_int]
            if idx.size == 0:
                return None
            window = dt
            if idx.size > bound:  # the group's first `bound` arrivals and the time they span
                window = float(self.source.t[lo + idx[bound]] - t0)
                idx = idx[:bound]
            return {
                "s": s,
                "m": m,
                "a": self.source.t[lo + idx] - t0,
                "p": self.source.prompt[lo + idx],
                "o": self.source.output[lo + idx],
                "h": hit_all[idx],
                "window": max(window, 1e-3),
            }
        # Synthetic: the group's arrivals as one renewal stream (a random m/r share of the
        # service's stream with its CV: ca2' = p ca2 + 1 - p), log-normal lengths.
        from ..perf.des import interarrivals

        # Scalar arithmetic in Python floats and whole-array NumPy calls (fewer, larger): this
        # runs for every service every step. Same draws, in the same order, as before.
        bound = SAMPLE_REQUESTS
        rate_rep = float(lam[s]) / max(reps, 1e-9)
        m = min(max(int(bound // max(rate_rep * dt, 1.0)), 1), r_int)
        frac = min(m / max(reps, 1e-9), 1.0)
        rate = rate_rep * m
        window = min(dt, bound / rate)
        ca2 = frac * float(svc.ca2[s]) + 1.0 - frac
        share = float(svc.prefix_share[s])
        p_hit = min(float(st.memory.hit[s]) / max(share, 1e-9), 1.0) if share > 0 else 0.0
        k = int(rate * window * 1.5 + 10)
        gaps = interarrivals(rng, rate, k, ca2)
        a = np.cumsum(gaps) - rng.random() * gaps[0]
        # Arrivals are sorted (gaps >= 0): the window is a slice.
        lo, hi = np.searchsorted(a, (0.0, window), "left").tolist()
        a = a[lo : min(hi, lo + bound)]
        if a.size == 0:
            return None
        z = rng.standard_normal((2, a.size))
        lens = _LENGTH_SIGMA * z
        lens -= _LENGTH_SHIFT
        np.exp(lens, out=lens)
        lens *= np.array([[float(svc.prompt[s])], [float(svc.output[s])]])
        lens = np.maximum(np.round(lens), 1.0)
        hit = np.where(rng.random(a.size) < p_hit, share, 0.0)
        prompt, output, cut_n = fit_context(lens[0], lens[1], self.max_context[s])
        return {
            "s": s,
            "m": m,
            "a": a,
            "p": prompt,
            "o": output,
            "h": hit,
            "window": window,
            "cut": cut_n,
        }

    def _times(self, w: World, groups: list[dict]) -> None:
        """Prefill work per sampled request and decode-step tables, one vectorised call each.

        Per group, two extra prefill evaluations (a full chunk and one token) give the
        service's chunk constants (:func:`.chunked.chunk_constants`).
        """
        svc = w.svc
        sid, tokens = [], []
        for g in groups:
            g["tok"] = np.maximum(g["p"] * (1.0 - g["h"]), 1.0)
            sid.append(np.full(g["a"].size + 2, g["s"]))
            tokens.append(np.concatenate([g["tok"], [float(CHUNK_TOKENS), 1.0]]))
        sid_a = np.concatenate(sid)
        tok = np.concatenate(tokens)
        pf = _per_dtype(
            svc,
            sid_a,
            lambda sub, sel, d: prefill_seconds(
                sub,
                svc.hw,
                svc.tp_attn[sid_a[sel]],
                tok[sel],
                ep=svc.ep[sid_a[sel]],
                dtype=d,
                profile=svc.profile,
            ),
        )
        pos = 0
        for g in groups:
            k = g["a"].size
            t_tok, w1 = constants_from(pf[pos + k], pf[pos + k + 1])
            g["work"] = prefill_work(g["tok"], pf[pos : pos + k], t_tok, w1)
            pos += k + 2
        # Decode step at occupancy 1..batch for every sampled service: a pure function of the
        # service's static tables and its mean context, so computed once per context (a
        # synthetic service's context never changes; a replay's changes with the trace).
        tables = self.__dict__.setdefault("_decode_tables", {})
        if len(tables) > 4096:
            tables.clear()
        keys = [(g["s"], int(svc.batch[g["s"]]), float(svc.context[g["s"]])) for g in groups]
        todo = sorted({k for k in keys if k not in tables})
        if todo:
            ds_a = np.concatenate([np.full(b, s) for s, b, _ in todo])
            dn_a = np.concatenate([np.arange(1, b + 1, dtype=float) for _, b, _ in todo])
            dec = _per_dtype(
                svc,
                ds_a,
                lambda sub, sel, d: decode_seconds_per_token(
                    sub,
                    svc.hw,
                    svc.tp_attn[ds_a[sel]],
                    dn_a[sel],
                    svc.context[ds_a[sel]],
                    ep=svc.ep[ds_a[sel]],
                    dtype=d,
                    profile=svc.profile,
                ),
            )
            pos = 0
            for k in todo:
                tables[k] = dec[pos : pos + k[1]]
                pos += k[1]
        for g, k in zip(groups, keys, strict=True):
            g["decode"] = tables[k]

    def _simulate(self, w, g, lat, backlog, replicas, rng):
        svc = w.svc
        s = g["s"]
        c = int(svc.batch[s])
        m = int(g["m"])
        es = float(lat["s0"][s] + lat["s1"][s])
        occ0 = int(min(round(float(lat["batch"][s])), c))
        q0 = float(backlog[s]) / max(float(replicas[s]), 1e-9)
        delay = q0 * es / c
        # Share of a replica's time on prefill chunks: the sampled work over the group's time.
        u_pre = min(float(g["work"].sum()) / max(m * g["window"], 1e-9), 0.9)
        busy = rng.random((m, occ0)) * es + (delay if q0 > 0 else 0.0)
        free = [delay if q0 > 0 else 0.0] * (c - occ0)
        n = g["a"].size
        pick = None
        if m > 1:  # two distinct candidate replicas per request
            r1 = rng.integers(m, size=n)
            r2 = (r1 + 1 + rng.integers(m - 1, size=n)) % m
            pick = list(zip(r1.tolist(), r2.tolist(), strict=True))
        # Rows arrive sorted (trace rows by time, synthetic arrivals by construction).
        return simulate_group(
            g["a"].tolist(),
            g["work"].tolist(),
            g["tok"].tolist(),
            g["o"].tolist(),
            g["decode"].tolist(),
            1.0 / (1.0 - u_pre),
            [busy[j].tolist() + free for j in range(m)],
            delay,
            float(svc.timeout_s[s]),
            pick,
        )


def fit_context(
    prompt: np.ndarray, output: np.ndarray, max_context: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """Truncate requests longer than the model's context window; (prompt, output, count).

    A request whose prompt + output exceeds ``max_context`` keeps its output (up to half the
    window) and its prompt is cut to the rest, as a client truncating history does; the
    count is reported as a warning. ``max_context`` 0 (unknown) changes nothing.
    """
    prompt = np.asarray(prompt, dtype=float)
    output = np.asarray(output, dtype=float)
    if max_context <= 0:
        return prompt, output, 0
    over = prompt + output > max_context
    if not over.any():
        return prompt, output, 0
    out = np.where(over, np.minimum(output, max_context // 2), output)
    pr = np.where(over, np.maximum(max_context - out, 1.0), prompt)
    return pr, out, int(over.sum())


def _per_dtype(svc, sid: np.ndarray, fn) -> np.ndarray:
    """Evaluate ``fn(model arrays, selection, dtype)`` per weight dtype over rows ``sid``."""
    out = np.empty(sid.size)
    dts = np.array(svc.dtype, dtype=object)[sid]
    for d in sorted(set(dts.tolist())):
        sel = dts == d
        sub = SimpleNamespace(**{k: v[sid[sel]] for k, v in vars(svc.m).items()})
        out[sel] = fn(sub, sel, d)
    return out


__all__ = ["HIST_EDGES", "HIST_KEYS", "pooled_quantile"]  # re-exported: readers import them here
