"""Prometheus histogram arithmetic over stored bucket counters (pure Python, no Django).

A serving engine's histogram is stored bucket-aware (``telemetry.ingest.serving``): each
``le`` is a cumulative counter. A window's quantile is computed the way Prometheus computes
``histogram_quantile(q, sum by (le) (rate(x_bucket[w])))``:

1. each bucket series' **increase** over the window: last − first value, a drop being a
   counter reset (the series restarted from zero, so the value after the drop is all new);
   unlike ``rate`` no extrapolation to the window's edges — a quantile is unchanged when every
   bucket is scaled by the same factor, so it does not matter for the figure;
2. the increases of every endpoint are **summed per** ``le``;
3. :func:`histogram_quantile`: buckets sorted by bound, made monotonic, the rank
   ``q × count(+Inf)`` located, and the value **interpolated linearly** inside its bucket
   (the first bucket starts at 0 when its bound is positive); a rank in the ``+Inf`` bucket
   answers the highest finite bound; no ``+Inf`` bucket, fewer than two buckets or no
   observations is NaN (no answer); ``q < 0`` is −Inf and ``q > 1`` +Inf.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Sequence


def counter_increase(values: Sequence[float]) -> float:
    """The increase of a counter over time-ordered ``values``, counter resets included."""
    if len(values) < 2:
        return 0.0
    total = 0.0
    previous = values[0]
    for value in values[1:]:
        # A drop is a restart: the counter counted ``value`` since it restarted from zero.
        total += value - previous if value >= previous else value
        previous = value
    return total


def histogram_quantile(q: float, buckets: Iterable[tuple[float, float]]) -> float:
    """The ``q``-quantile of cumulative ``(upper bound, count)`` buckets, as Prometheus'
    ``histogram_quantile`` computes it (see the module docstring). NaN means "no answer"."""
    if math.isnan(q):
        return math.nan
    if q < 0:
        return -math.inf
    if q > 1:
        return math.inf
    ordered = sorted(buckets)
    if len(ordered) < 2 or not math.isinf(ordered[-1][0]):
        return math.nan
    bounds = [b for b, _ in ordered]
    counts: list[float] = []
    for _, count in ordered:  # monotonic, as Prometheus' ensureMonotonic makes it
        counts.append(max(count, counts[-1]) if counts else count)
    observations = counts[-1]
    if observations <= 0 or math.isnan(observations):
        return math.nan
    rank = q * observations
    b = bisect.bisect_left(counts, rank)
    if b == len(counts) - 1:
        return bounds[-2]
    if b == 0 and bounds[0] <= 0:
        return bounds[0]
    start, end, count = 0.0, bounds[b], counts[b]
    if b > 0:
        start = bounds[b - 1]
        count -= counts[b - 1]
        rank -= counts[b - 1]
    if count <= 0:
        return start
    return start + (end - start) * (rank / count)
