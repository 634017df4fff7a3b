"""Writing dense frames and keeping their rollups, exactly once per (metric, layout, time).

Callers own the transaction. A frame that already exists is skipped and does not reach the
rollups, so a replayed tick changes nothing.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np

from monitoring.models import Cluster, Frame, FrameLayout
from monitoring.telemetry.registry import entities_resolve
from monitoring.telemetry.store import ROLLUP_RESOLUTIONS

VALUE_DTYPE = np.float32
COUNT_DTYPE = np.int32
SUM_DTYPE = np.float64


def keys_digest(keys: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(keys).encode()).hexdigest()


def layout_for_keys(cluster: Cluster, kind: str, keys: Sequence[str]) -> FrameLayout:
    """The layout for ``keys`` in this order, registering entities and layout on first use."""
    digest = keys_digest(keys)
    layout = FrameLayout.objects.filter(cluster=cluster, kind=kind, keys_digest=digest).first()
    if layout is not None:
        return layout
    resolved = entities_resolve(cluster, {(kind, key) for key in keys})
    ids = np.array([resolved[(kind, key)] for key in keys], dtype=np.int64)
    FrameLayout.objects.bulk_create(
        [
            FrameLayout(
                cluster=cluster,
                kind=kind,
                keys_digest=digest,
                size=len(keys),
                entity_ids=ids.tobytes(),
            )
        ],
        ignore_conflicts=True,
    )
    return FrameLayout.objects.get(cluster=cluster, kind=kind, keys_digest=digest)


def layout_entity_ids(layout: FrameLayout) -> np.ndarray:
    return np.frombuffer(bytes(layout.entity_ids), dtype=np.int64)


def _when(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def frames_write(*, layout: FrameLayout, values: dict[int, np.ndarray], ts: float) -> int:
    """Store one raw frame per metric id and fold it into the rollups; returns frames added."""
    when = _when(ts)
    existing = set(
        Frame.objects.filter(
            layout=layout, resolution=0, ts=when, metric_id__in=list(values)
        ).values_list("metric_id", flat=True)
    )
    new = {m: np.asarray(v, dtype=VALUE_DTYPE) for m, v in values.items() if m not in existing}
    for metric_id, array in new.items():
        if array.shape != (layout.size,):
            raise ValueError(
                f"metric {metric_id}: frame has {array.size} values, layout has {layout.size}"
            )
    Frame.objects.bulk_create(
        [
            Frame(metric_id=m, layout=layout, resolution=0, ts=when, values=a.tobytes())
            for m, a in new.items()
        ]
    )
    for resolution in ROLLUP_RESOLUTIONS:
        bucket = _when(math.floor(ts / resolution) * resolution)
        _rollups_merge(layout, resolution, bucket, new)
    return len(new)


def _rollups_merge(
    layout: FrameLayout, resolution: int, bucket: datetime, new: dict[int, np.ndarray]
) -> None:
    if not new:
        return
    current = {
        f.metric_id: f
        for f in Frame.objects.select_for_update().filter(
            layout=layout, resolution=resolution, ts=bucket, metric_id__in=list(new)
        )
    }
    to_create, to_update = [], []
    for metric_id, array in new.items():
        present = ~np.isnan(array)
        values = np.where(present, array, 0).astype(SUM_DTYPE)
        frame = current.get(metric_id)
        if frame is None:
            frame = Frame(metric_id=metric_id, layout=layout, resolution=resolution, ts=bucket)
            count = present.astype(COUNT_DTYPE)
            total = values
            low = np.where(present, array, np.nan).astype(VALUE_DTYPE)
            high = low
            to_create.append(frame)
        else:
            count = np.frombuffer(bytes(frame.count), COUNT_DTYPE) + present
            total = np.frombuffer(bytes(frame.sum), SUM_DTYPE) + values
            low = np.fmin(np.frombuffer(bytes(frame.min), VALUE_DTYPE), array)
            high = np.fmax(np.frombuffer(bytes(frame.max), VALUE_DTYPE), array)
            to_update.append(frame)
        frame.count = count.astype(COUNT_DTYPE).tobytes()
        frame.sum = total.astype(SUM_DTYPE).tobytes()
        frame.min = low.astype(VALUE_DTYPE).tobytes()
        frame.max = high.astype(VALUE_DTYPE).tobytes()
    Frame.objects.bulk_create(to_create)
    if to_update:
        Frame.objects.bulk_update(to_update, ["count", "sum", "min", "max"])
