"""Per-bucket aggregates of card series on a PromQL server, for derived fleet figures
(``telemetry.read.fleet``).

Each card's series is fetched at the plotted step (``query_range``, so one value per card per
step) and folded here after the ingestion mapping (units, DCGM sentinels, npu-exporter's -1
exactly as stored data). That is one range query per exporter family of each metric, and the
answer grows with the fleet: above a few thousand cards, define the recording rules listed in
``docs/architecture.md`` §4 so the server keeps the sums itself.
"""

from __future__ import annotations

import math
from datetime import datetime

from telemetry.models import PromQLDataSource
from telemetry.read.fleet import CardAgg, CardBuckets
from telemetry.read.promql.reads import MIN_STEP_SECONDS, TARGET_POINTS, _Reader
from telemetry.read.steps import HOUR_SECONDS, hour_dividing_step


def card_buckets(
    source: PromQLDataSource,
    *,
    names: list[str],
    start: datetime,
    end: datetime,
    hour_aligned: bool = False,
) -> tuple[int, CardBuckets]:
    span = max(1.0, (end - start).total_seconds())
    step = max(MIN_STEP_SECONDS, math.ceil(span / TARGET_POINTS))
    if hour_aligned:  # per-hour figures: no step straddles an hour's edge
        step = hour_dividing_step(min(step, HOUR_SECONDS), 1)
    reader = _Reader(source)
    buckets: CardBuckets = {}
    for name in names:
        seen: dict[int, dict[tuple, float]] = {}
        for sample in reader.ranged(name, start=start, end=end, step=step, vendor_id=None):
            if sample.entity.kind != "accelerator":
                continue
            at = int(sample.timestamp // step * step)
            card = (sample.entity.host, sample.entity.index, sample.entity.vendor_id)
            seen.setdefault(at, {})[card] = sample.value
        for at, cards in seen.items():
            values = list(cards.values())
            buckets.setdefault(at, {})[name] = CardAgg(
                len(values), float(sum(values)), sum(1 for v in values if v >= 0.999999)
            )
    return step, buckets
