"""Reading a step's simulated request groups: quantiles, attainment and histograms.

Split out of :mod:`.requests` (modules under ~500 lines). Every group's figures come from
a few array operations over all groups of the step (issue 35 item 7: per-group NumPy calls on
~64 requests were most of the step's serving cost); the arithmetic is that of the per-group
reading (:func:`_quantiles` on each group, histograms summed group by group).
"""

from __future__ import annotations

import math

import numpy as np

from ..serving_histograms import STEP_HISTOGRAMS

# Run-level histograms: log-spaced seconds, 1 ms .. 3 h, 40 bins per decade.
HIST_EDGES = np.logspace(-3.0, 4.0, 281)
HIST_KEYS = ("ttft", "tpot", "e2e")


def _quantiles(a: np.ndarray, qs: tuple[float, ...]) -> list[float]:
    """Linear-interpolated quantiles (NumPy's default method) without its per-call overhead."""
    x = np.sort(a)
    pos = np.asarray(qs) * (x.size - 1)
    lo = np.floor(pos).astype(int)
    hi = np.minimum(lo + 1, x.size - 1)
    return (x[lo] + (pos - lo) * (x[hi] - x[lo])).tolist()


def _segments(x: np.ndarray, gid: np.ndarray, n_groups: int) -> tuple:
    """``x`` sorted within each group (groups in order), group offsets and sizes."""
    ks = np.bincount(gid, minlength=n_groups)
    offs = np.concatenate(([0], np.cumsum(ks)[:-1]))
    return x[np.lexsort((x, gid))], offs, ks


def _segment_quantiles(xs, offs, ks, qs: tuple[float, ...]) -> np.ndarray:
    """:func:`_quantiles` of every group of a segment-sorted array; (groups, len(qs)).

    Rows of empty groups are NaN. Same interpolation and arithmetic as :func:`_quantiles`.
    """
    pos = np.asarray(qs)[None, :] * (ks[:, None] - 1)
    lo = np.floor(pos).astype(int)
    hi = np.minimum(lo + 1, ks[:, None] - 1)
    empty = ks == 0
    base = offs[:, None]
    last = max(xs.size - 1, 0)
    a = xs[np.clip(base + lo, 0, last)] if xs.size else np.zeros(lo.shape)
    b = xs[np.clip(base + hi, 0, last)] if xs.size else np.zeros(lo.shape)
    out = a + (pos - lo) * (b - a)
    out[empty] = np.nan
    return out


def record(st, svc, lat, lam, dt, sims, sample, hist) -> None:
    """Write the simulated groups' quantiles, attainment and histograms (see ``apply``)."""
    n_g = len(sims)
    s_idx = np.array([g["s"] for g, _ in sims])
    ks = np.array([r[0].size for _, r in sims])
    gid = np.repeat(np.arange(n_g), ks)
    ttft, tpot, e2e, dead = (np.concatenate([r[i] for _, r in sims]) for i in range(4))
    live = ~dead
    sample[s_idx] = ks
    wts = lam[s_idx] * dt / ks  # requests each sampled request stands for
    t_s, t_o, t_k = _segments(ttft, gid, n_g)
    p_s, p_o, p_k = _segments(tpot[live], gid[live], n_g)
    e_s, e_o, e_k = _segments(e2e, gid, n_g)
    q = _segment_quantiles(t_s, t_o, t_k, (0.5, 0.99))
    lat["ttft_p50"][s_idx], lat["ttft_p99"][s_idx] = q[:, 0], q[:, 1]
    has = p_k > 0
    q = _segment_quantiles(p_s, p_o, p_k, (0.5, 0.99))
    lat["tpot_p50"][s_idx[has]], lat["tpot_p99"][s_idx[has]] = q[has, 0], q[has, 1]
    q = _segment_quantiles(e_s, e_o, e_k, (0.5, 0.99))
    lat["p50"][s_idx], lat["p99"][s_idx] = q[:, 0], q[:, 1]
    srv = s_idx[gid]
    ok = live & (ttft <= svc.slo_ttft_s[srv]) & (tpot <= svc.slo_tpot_s[srv])
    lat["attainment"][s_idx] = np.bincount(gid, weights=ok, minlength=n_g) / ks
    acc = st.summary
    drawn = ((t_s, t_o, t_k), (p_s, p_o, p_k), (e_s, e_o, e_k))
    for key, (xs, _, kk) in zip(HIST_KEYS, drawn, strict=True):
        _accumulate_groups(acc, key, xs, np.repeat(np.arange(n_g), kk), wts)
    for (name, bounds), (xs, offs, kk) in zip(STEP_HISTOGRAMS.items(), drawn, strict=True):
        nb = len(bounds) + 1
        g_of = np.repeat(np.arange(n_g), kk)
        j0 = np.searchsorted(bounds, xs, "left")  # x <= bounds[j] for every j >= j0
        counts = np.bincount(g_of * nb + j0, minlength=n_g * nb).reshape(n_g, nb)
        hist[name][s_idx, :-1] = np.cumsum(counts, axis=1) * wts[:, None]
        sums = np.array(
            [xs[o : o + k].sum() for o, k in zip(offs.tolist(), kk.tolist(), strict=True)]
        )
        hist[name][s_idx, -1] = sums * wts
    acc["req_sampled"] = acc.get("req_sampled", 0.0) + float(ks.sum())
    c = st.services.counters
    for (g, _), wt in zip(sims, wts.tolist(), strict=True):
        if g.get("cut"):  # synthetic draws past the context window, scaled to the step
            c["prompts_truncated"] = c.get("prompts_truncated", 0.0) + g["cut"] * wt


def _accumulate_groups(
    acc: dict, key: str, values: np.ndarray, gid: np.ndarray, weights: np.ndarray
) -> None:
    """Add each group's values (seconds), weighing ``weights[g]`` each, to the run histogram
    ``req_hist_<key>``, group by group (the order the per-group sums always added up in)."""
    name = f"req_hist_{key}"
    h = acc.get(name)
    if not isinstance(h, np.ndarray):
        h = np.zeros(HIST_EDGES.size + 1)
    nb = h.size
    idx = np.searchsorted(HIST_EDGES, np.asarray(values, dtype=float), "right")
    counts = np.bincount(gid * nb + idx, minlength=weights.size * nb).reshape(-1, nb)
    for row, wt in zip(counts, weights.tolist(), strict=True):
        h = h + row * wt  # group by group, as the per-group sums always added up
    acc[name] = h


def pooled_quantile(acc: dict, key: str, q: float) -> float | None:
    """Quantile (seconds) of a run histogram; log-linear inside a bin; None when empty."""
    h = acc.get(f"req_hist_{key}")
    if not isinstance(h, np.ndarray) or h.sum() <= 0:
        return None
    cum = np.cumsum(h) / h.sum()
    i = int(np.searchsorted(cum, q, "left"))
    if i == 0:
        return float(HIST_EDGES[0])
    if i >= HIST_EDGES.size:
        return float(HIST_EDGES[-1])
    lo, hi = math.log(HIST_EDGES[i - 1]), math.log(HIST_EDGES[i])
    prev = cum[i - 1]
    frac = (q - prev) / max(cum[i] - prev, 1e-12)
    return float(math.exp(lo + frac * (hi - lo)))
