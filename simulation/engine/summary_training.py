"""Training figures of a run summary added by issue 14 (goodput, comm/bubble, submissions).

Throughput counts every sample computed; **goodput** subtracts the work later thrown away by
preemptions and failures (lost since the last checkpoint), so restart and checkpoint policy
show up as goodput < throughput. Restart time shows in both (no progress while restarting).
"""

from __future__ import annotations

import numpy as np


def update(acc: dict, train: dict) -> None:
    """Card-weighted communication and bubble shares of running jobs."""
    w = train["cards"]
    acc["comm_w"] = acc.get("comm_w", 0.0) + float((train["comm_share"] * w).sum())
    acc["bubble_w"] = acc.get("bubble_w", 0.0) + float((train.get("bubble_share", 0 * w) * w).sum())


def finish(acc: dict, w, st, base: dict) -> dict:
    """Extra summary keys (added to the policy summary, never renaming an existing one)."""
    c = st.counters
    t = max(st.t, 1e-9)
    thr = base["training_samples_per_s_mean"]
    pf = base["training_pflops_mean"]
    lost_pf = c.get("lost_flops", 0.0) / t / 1e15
    good_pf = max(pf - lost_pf, 0.0)
    ww = max(acc.get("mfu_w", 0.0), 1e-9)
    return {
        "training_goodput_samples_per_s": max(thr - c["lost_samples"] / t, 0.0),
        "training_goodput_pflops": good_pf,
        "training_goodput_ratio": good_pf / pf if pf > 0 else 1.0,
        "comm_share_mean": acc.get("comm_w", 0.0) / ww,
        "bubble_share_mean": acc.get("bubble_w", 0.0) / ww,
        "training_jobs_submitted": int((w.jobs.submit <= st.t).sum()),
        "drains": int(c.get("drains", 0)),
        "lost_pflop": c.get("lost_flops", 0.0) / 1e15,
        "training_demand_completed_share": float(np.mean(st.jobs.state[w.jobs.submit <= st.t] == 3))
        if (w.jobs.submit <= st.t).any()
        else 0.0,
    }
