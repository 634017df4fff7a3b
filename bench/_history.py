"""Synthetic history for benchmarks: N days of telemetry for a twin cluster, written fast.

One real twin tick writes the current frames and rows (layouts, metric ids, realistic
values). From those values this module writes, with COPY, the history the store would hold
after N days of operation under the default retention: hourly rollups for N days, 15-minute
rollups for 8 days of frames and 35 days of cluster rows, minute
rollups for the frame-minute retention (2 days) and for 8 days of cluster rows, raw frames
for 6 hours and raw cluster samples for 48 hours. Values follow a diurnal curve around the
tick's values; they exercise sizes and plans, not the model.
"""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime

import numpy as np
from django.db import connection

from telemetry.models import Frame, RollupWatermark, Sample
from telemetry.store.frame_codec import frame_array

DAY, HOUR, MINUTE = 86400, 3600, 60


def _diurnal(seconds: float) -> float:
    return 0.8 + 0.2 * math.sin(2 * math.pi * ((seconds / 86400) % 1))


def build_history(
    cluster,
    *,
    days: int,
    frame_minute_days: int = 2,
    frame_15min_days: int = 8,
    row_15min_days: int = 35,
    raw_hours: int = 6,
    row_minute_days: int = 8,
    row_raw_hours: int = 48,
    progress=print,
) -> dict:
    now = math.floor(time.time() / MINUTE) * MINUTE
    base_frames = {}
    for frame in Frame.objects.filter(layout__cluster=cluster, resolution=0).select_related(
        "layout"
    ):
        key = (frame.metric_id, frame.layout_id)
        base_frames.setdefault(key, frame_array(frame.values, np.float32).copy())
    base_rows = {}
    for metric_id, entity_id, value in Sample.objects.filter(entity__cluster=cluster).values_list(
        "metric_id", "entity_id", "value"
    ):
        base_rows[(metric_id, entity_id)] = value
    Frame.objects.filter(layout__cluster=cluster).delete()
    Sample.objects.filter(entity__cluster=cluster).delete()

    counts = {"frames": 0, "rollup_rows": 0, "samples": 0}
    plans = (
        # Daily frames, as the store keeps them (rollup_day_days): what month-long cost
        # windows read for whole days.
        (86400, days, DAY, 1440),
        (3600, days * 24, HOUR, 60),
        (900, min(days, frame_15min_days) * 96, 900, 15),
        (60, frame_minute_days * 1440, MINUTE, 1),
        (0, raw_hours * 60, MINUTE, 1),
    )
    with connection.cursor() as cursor:
        raw = cursor.cursor
        with raw.copy(
            'COPY monitoring_frame (metric_id, layout_id, resolution, ts, "values", count, '
            "sum, min, max, entities_sum, entities_count) FROM STDIN"
        ) as copy:
            for resolution, buckets, step, per_bucket in plans:
                # Rollup buckets start on their resolution, as the store writes them.
                aligned = now // step * step if resolution else now
                for i in range(buckets):
                    at = aligned - (buckets - i) * step
                    factor = _diurnal(at)
                    when = datetime.fromtimestamp(at, tz=UTC)
                    for (metric_id, layout_id), values in base_frames.items():
                        v = (values * factor).astype(np.float32)
                        present = ~np.isnan(v)
                        # Every entity's bucket mean is v: the stored fleet reduction.
                        reduction = (float(v[present].sum(dtype=np.float64)), int(present.sum()))
                        if resolution == 0:
                            copy.write_row(
                                (
                                    metric_id,
                                    layout_id,
                                    0,
                                    when,
                                    v.tobytes(),
                                    None,
                                    None,
                                    None,
                                    None,
                                    *reduction,
                                )
                            )
                        else:
                            copy.write_row(
                                (
                                    metric_id,
                                    layout_id,
                                    resolution,
                                    when,
                                    None,
                                    (present * per_bucket).astype(np.int32).tobytes(),
                                    (np.where(present, v, 0) * per_bucket)
                                    .astype(np.float64)
                                    .tobytes(),
                                    (v * 0.9).tobytes(),
                                    (v * 1.1).tobytes(),
                                    *reduction,
                                )
                            )
                        counts["frames"] += 1
                progress(f"  frames at resolution {resolution}: {buckets} buckets written")
        with raw.copy(
            "COPY monitoring_rollup (metric_id, entity_id, resolution, bucket, count, sum, min, "
            "max) FROM STDIN"
        ) as copy:
            for resolution, buckets, per_bucket in (
                (3600, days * 24, 60),
                (900, min(days, row_15min_days) * 96, 15),
                (60, row_minute_days * 1440, 1),
            ):
                step = resolution
                # Rollup buckets start on their resolution, as the store writes them.
                aligned = now // step * step if resolution else now
                for i in range(buckets):
                    at = aligned - (buckets - i) * step
                    factor = _diurnal(at)
                    when = datetime.fromtimestamp(at, tz=UTC)
                    for (metric_id, entity_id), value in base_rows.items():
                        v = value * factor
                        copy.write_row(
                            (
                                metric_id,
                                entity_id,
                                resolution,
                                when,
                                per_bucket,
                                v * per_bucket,
                                v * 0.9,
                                v * 1.1,
                            )
                        )
                        counts["rollup_rows"] += 1
        with raw.copy(
            "COPY monitoring_sample (metric_id, entity_id, ts, value) FROM STDIN"
        ) as copy:
            for i in range(row_raw_hours * 60):
                at = now - (row_raw_hours * 60 - i) * MINUTE
                factor = _diurnal(at)
                when = datetime.fromtimestamp(at, tz=UTC)
                for (metric_id, entity_id), value in base_rows.items():
                    copy.write_row((metric_id, entity_id, when, value * factor))
                    counts["samples"] += 1
    for resolution in (60, 900, 3600, 86400):
        complete = math.floor((now - MINUTE) / resolution) * resolution
        RollupWatermark.objects.update_or_create(
            resolution=resolution,
            defaults={"complete_until": datetime.fromtimestamp(complete, tz=UTC)},
        )
    with connection.cursor() as cursor:
        # What autovacuum would have done by now: statistics and the visibility map.
        cursor.execute("VACUUM ANALYZE")
    return counts
