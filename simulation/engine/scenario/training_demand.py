"""Training demand as an arrival process (issue 14), not a backlog built to fill the cluster.

Jobs arrive as a Poisson process. The size mix follows what multi-tenant GPU clusters report:
most jobs are small (Philly: the majority of jobs use 1 GPU; Helios: ~ 50-70 % single-GPU jobs)
while a tail of large gangs holds most of the GPU time (Jeon et al., ATC'19; Hu et al., SC'21).
Run time at the requested size is log-normal (heavy-tailed) with a median that grows with the
gang size. The arrival rate is set so the *offered* load - card-hours requested per hour - is
``training_load`` x the cards left after the inference partition sized for peak; both policies
see exactly these jobs on the same card count. Jobs that arrived in the ``warm_hours`` before
the start and would still be running are submitted at t = 0 with their remaining work, so a run
starts near steady state instead of from an empty cluster.

A job's work is ``duration x its rate on its requested size`` (from the training step model),
so a larger elastic allocation finishes sooner and a slower placement later.
"""

from __future__ import annotations

import math
import random

# (cards, share of jobs, parameters): a Philly/Helios-like count mix with a large-job tail.
JOB_SIZE_MIX = (
    (1, 0.40, 1.3e9),
    (2, 0.10, 2.7e9),
    (4, 0.12, 7e9),
    (8, 0.20, 7e9),
    (16, 0.07, 13e9),
    (32, 0.05, 13e9),
    (64, 0.03, 34e9),
    (128, 0.02, 70e9),
    (256, 0.008, 70e9),
    (512, 0.002, 175e9),
)
DURATION_SIGMA = 1.2  # log-normal sigma of run time (heavy tail)
MAX_DURATION_H = 72.0


def median_hours(cards: int) -> float:
    """Median run time at the requested size: 0.5 h for one card, ~3 h for 512."""
    return 0.5 * cards**0.3


def mean_card_hours(max_gang: int) -> float:
    """Expected card-hours of one job of the mix (log-normal mean, cap ignored)."""
    return sum(
        p * min(c, max_gang) * median_hours(min(c, max_gang)) * math.exp(DURATION_SIGMA**2 / 2)
        for c, p, _ in JOB_SIZE_MIX
    )


def draw_jobs(
    rnd: random.Random,
    *,
    train_cards: float,
    horizon_s: float,
    training_load: float,
    max_gang: int,
    n_jobs: int | None = None,
    warm_hours: float = 24.0,
) -> list[dict]:
    """Arrivals over ``[-warm_hours, horizon)``: dicts with cards, params, submit, duration.

    ``n_jobs`` fixes the number of jobs instead (arrival times uniform, durations scaled so
    the offered load is still ``training_load``).
    """
    span_h = horizon_s / 3600.0 + warm_hours
    rate_h = training_load * train_cards / mean_card_hours(max_gang)  # jobs per hour
    scale = 1.0
    if n_jobs is not None:
        scale = rate_h * span_h / max(n_jobs, 1)
        count = n_jobs
    else:
        count = None
    probs = [p for _, p, _ in JOB_SIZE_MIX]
    out = []
    t = -warm_hours * 3600.0
    i = 0
    while True:
        if count is None:
            t += rnd.expovariate(rate_h / 3600.0)
            if t >= horizon_s:
                break
        else:
            if i >= count:
                break
            t = rnd.uniform(-warm_hours * 3600.0, horizon_s)
        i += 1
        cards, _, params = rnd.choices(JOB_SIZE_MIX, weights=probs)[0]
        cards = min(cards, max_gang)
        dur_h = min(
            rnd.lognormvariate(math.log(median_hours(cards)), DURATION_SIGMA), MAX_DURATION_H
        )
        dur = max(dur_h * scale * 3600.0, 300.0)
        if t < 0:
            dur += t  # already ran since it arrived (warm start)
            if dur < 300.0:
                continue
        out.append({"cards": cards, "params": params, "submit": max(t, 0.0), "duration": dur})
    out.sort(key=lambda d: d["submit"])
    return out
