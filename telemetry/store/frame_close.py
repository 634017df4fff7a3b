"""Folding closed minutes of frames into the 15-minute, hour and day tiers, exactly once.

Writers fold frames into the minute tier only (``store.frames``). Once a minute has closed,
compaction reads its minute rollups and merges them into the coarser tiers, then moves the
layout's ``coarse_until`` past it, all under the layout's row lock and in one transaction per
layout: a writer's late frame for that minute either committed before (and is in the minute
rollup folded here) or sees the new ``coarse_until`` and folds itself into every tier.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta

import numpy as np
from django.db import transaction

from telemetry.models import Frame, FrameLayout
from telemetry.store.frame_codec import frame_array
from telemetry.store.frames import (
    COUNT_DTYPE,
    DEFERRED_RESOLUTIONS,
    MINUTE,
    SUM_DTYPE,
    VALUE_DTYPE,
    aggregates_fold,
    rollups_merge,
)
from telemetry.store.samples import bucket_start, to_datetime

# A twin tick stamps its frames within the last tick interval (10 s) before it commits, so a
# minute is closed this long after its end; a frame later than that is still folded (late).
CLOSE_LAG_SECONDS = 30
# Minutes folded per pass: bounds the aggregates held in memory after a long pause.
_WINDOW = timedelta(hours=1)


def frames_rollups_close(*, now: float | None = None, lag: float = CLOSE_LAG_SECONDS) -> int:
    """Fold every closed minute not yet in the coarse tiers; returns the minute frames read."""
    now = time.time() if now is None else now
    limit = to_datetime(bucket_start(now - lag, MINUTE))
    pending = FrameLayout.objects.filter(coarse_until__lt=limit).values_list("pk", flat=True)
    folded = 0
    for layout_id in list(pending):
        with transaction.atomic():
            layout = FrameLayout.objects.select_for_update().get(pk=layout_id)
            if layout.coarse_until is None or layout.coarse_until >= limit:
                continue  # a writer or another compaction moved it meanwhile
            minutes = Frame.objects.filter(layout=layout, resolution=MINUTE, ts__lt=limit)
            start = layout.coarse_until
            while True:
                # Jump over stretches without data (a run paused for days costs one query).
                first = minutes.filter(ts__gte=start).order_by("ts").values_list("ts").first()
                if first is None:
                    break
                end = min(limit, first[0] + _WINDOW)
                folded += _fold_minutes(layout, first[0], end)
                start = end
            layout.coarse_until = limit
            layout.save(update_fields=["coarse_until"])
    return folded


def _fold_minutes(layout: FrameLayout, start: datetime, end: datetime) -> int:
    partial: dict[tuple[int, float], dict[int, list[np.ndarray]]] = {}
    minutes = Frame.objects.filter(
        layout=layout, resolution=MINUTE, ts__gte=start, ts__lt=end
    ).values_list("metric_id", "ts", "count", "sum", "min", "max")
    read = 0
    for metric_id, ts, count, total, low, high in minutes.iterator(chunk_size=100):
        part = (
            frame_array(count, COUNT_DTYPE),
            frame_array(total, SUM_DTYPE),
            frame_array(low, VALUE_DTYPE),
            frame_array(high, VALUE_DTYPE),
        )
        for resolution in DEFERRED_RESOLUTIONS:
            key = (resolution, bucket_start(ts.timestamp(), resolution))
            aggregates_fold(partial.setdefault(key, {}), metric_id, part)
        read += 1
    for (resolution, bucket), aggregates in sorted(partial.items()):
        rollups_merge(layout, resolution, to_datetime(bucket), aggregates)
    return read
