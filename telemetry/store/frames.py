"""Writing dense frames and keeping their rollups, exactly once per (metric, layout, time).

Callers own the transaction. A frame that already exists is skipped and does not reach the
rollups, so a replayed tick changes nothing.

Each write folds its frames into the minute tier at once; the 15-minute, hour and day tiers
are folded from each *closed* minute by compaction (``store.frame_close``), once, so a
10-second twin tick rewrites one rollup array per metric instead of four. The layout's
``coarse_until`` says which minutes are already folded; a frame that arrives for one of those
(late) goes to every tier here. Both sides hold the layout's row lock, so a minute is folded
exactly once whichever path takes it. Coarse tiers therefore trail the newest minute by up to
a compaction interval; the minute tier and raw frames never do.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
from django.conf import settings
from django.db import connection

from inventory.models import Cluster
from telemetry.catalogue.registry import entities_resolve
from telemetry.models import Frame, FrameLayout
from telemetry.store.frame_codec import compression_enabled, frame_array, frame_bytes
from telemetry.store.frame_memo import (
    layout_forget,
    layout_held,
    layout_hold,
    rollups_locked,
    rollups_remember,
    rollups_remember_created,
)
from telemetry.store.samples import ROLLUP_RESOLUTIONS, bucket_start, to_datetime

VALUE_DTYPE = np.float32
COUNT_DTYPE = np.int32
SUM_DTYPE = np.float64
MINUTE = 60
# Tiers folded from closed minutes by compaction rather than by every write.
DEFERRED_RESOLUTIONS = tuple(r for r in ROLLUP_RESOLUTIONS if r != MINUTE)


def keys_digest(keys: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(keys).encode()).hexdigest()


def layout_for_keys(cluster: Cluster, kind: str, keys: Sequence[str]) -> FrameLayout:
    """The layout for ``keys`` in this order, registering entities and layout on first use."""
    digest = keys_digest(keys)
    layout = layout_held(cluster.pk, kind, digest)
    if layout is not None:
        return layout  # checked by the lock of ``_coarse_until`` before anything is written
    layout = FrameLayout.objects.filter(cluster=cluster, kind=kind, keys_digest=digest).first()
    if layout is not None:
        layout_hold(layout)
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
    layout = FrameLayout.objects.get(cluster=cluster, kind=kind, keys_digest=digest)
    layout_hold(layout)
    return layout


def layout_entity_ids(layout: FrameLayout) -> np.ndarray:
    return np.frombuffer(bytes(layout.entity_ids), dtype=np.int64)


def _when(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def frames_write(
    *,
    layout: FrameLayout,
    values: dict[int, np.ndarray],
    ts: float,
    provenance: int | None = None,
) -> int:
    """Store one raw frame per metric id and fold it into the rollups; returns frames added."""
    return frames_write_many(layout=layout, batches=[(ts, values)], provenance=provenance)


def frames_write_many(
    *,
    layout: FrameLayout,
    batches: list[tuple[float, dict[int, np.ndarray]]],
    provenance: int | None = None,
) -> int:
    """Store raw frames for several times at once; rollups are merged once per bucket.

    ``provenance`` (a ``SampleSource`` id, one per call) is stored on each raw frame: gates
    read raw frames only, so rollup frames need none.

    A multi-step twin tick writes ten steps that share one hour and one day bucket: folding
    them in memory first turns thirty rollup writes per metric into a handful.
    """
    # Raw frames may be thinned to one per TELEMETRY_RAW_FRAME_SECONDS window (the demo: one
    # per tick instead of one per simulated minute); every batch still reaches the rollups.
    # A thinned batch counts as written when its window's kept frame exists, so a replay
    # still changes nothing.
    spacing = float(getattr(settings, "TELEMETRY_RAW_FRAME_SECONDS", 0) or 0)
    kept: list[int] = list(range(len(batches)))
    if spacing > 0:
        # Newest first: keep a batch's raw frame only if it is at least ``spacing`` older
        # than the last one kept; every other batch is represented by the next kept one.
        order = sorted(range(len(batches)), key=lambda i: batches[i][0], reverse=True)
        current = None
        for i in order:
            if current is None or batches[current][0] - batches[i][0] >= spacing:
                current = i
            kept[i] = current
    whens = [_when(ts) for ts, _ in batches]
    compress = compression_enabled()
    until = _coarse_until(layout, min(ts for ts, _ in batches)) if batches else math.inf
    existing = set(
        Frame.objects.filter(
            layout=layout, resolution=0, ts__in=sorted({whens[k] for k in kept})
        ).values_list("metric_id", "ts")
    )
    raw: list[Frame] = []
    partial: dict[tuple[int, float], dict[int, list[np.ndarray]]] = {}
    for i, (ts, values) in enumerate(batches):
        when = whens[kept[i]]
        for metric_id, given in values.items():
            if (metric_id, when) in existing:
                continue
            array = np.asarray(given, dtype=VALUE_DTYPE)
            if array.shape != (layout.size,):
                raise ValueError(
                    f"metric {metric_id}: frame has {array.size} values, layout has {layout.size}"
                )
            present = ~np.isnan(array)
            if kept[i] == i:
                raw.append(
                    Frame(
                        metric_id=metric_id,
                        layout=layout,
                        resolution=0,
                        ts=when,
                        values=frame_bytes(array, compress=compress),
                        entities_sum=float(array[present].sum(dtype=np.float64)),
                        entities_count=int(present.sum()),
                        source_id=provenance,
                    )
                )
            # A minute already folded into the coarse tiers (a late frame) goes to all of them.
            late = bucket_start(ts, MINUTE) < until
            count = present.astype(COUNT_DTYPE)
            total = np.where(present, array, 0).astype(SUM_DTYPE)
            for resolution in ROLLUP_RESOLUTIONS if late else (MINUTE,):
                key = (resolution, bucket_start(ts, resolution))
                aggregates_fold(
                    partial.setdefault(key, {}), metric_id, (count, total, array, array)
                )
    frames_insert(raw)
    for (resolution, bucket), aggregates in sorted(partial.items()):
        rollups_merge(layout, resolution, _when(bucket), aggregates)
    return len(raw)


def _coarse_until(layout: FrameLayout, oldest: float) -> float:
    """Lock the layout's row and return the time before which minutes are already folded into
    the coarse tiers. A layout that has none yet (new, or written before the tiers were
    deferred, when every write folded all tiers) starts at the minute of ``oldest``, or after
    its newest minute rollup if that is later (those minutes are in the coarse tiers)."""
    try:
        until = (
            FrameLayout.objects.select_for_update()
            .values_list("coarse_until", flat=True)
            .get(pk=layout.pk)
        )
    except FrameLayout.DoesNotExist:
        layout_forget(layout.pk)  # deleted since it was held: the retry registers it again
        raise
    if until is None:
        until = to_datetime(bucket_start(oldest, MINUTE))
        newest = (
            Frame.objects.filter(layout=layout, resolution=MINUTE, ts__gte=until)
            .order_by("-ts")
            .values_list("ts", flat=True)
            .first()
        )
        if newest is not None:
            until = newest + timedelta(seconds=MINUTE)
        FrameLayout.objects.filter(pk=layout.pk).update(coarse_until=until)
    layout.coarse_until = until
    return until.timestamp()


def aggregates_fold(
    aggregates: dict[int, list[np.ndarray]],
    metric_id: int,
    part: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
) -> None:
    """Merge ``(count, sum, min, max)`` arrays into ``aggregates[metric_id]`` (NaN = none)."""
    count, total, low, high = part
    current = aggregates.get(metric_id)
    if current is None:
        aggregates[metric_id] = [count, total, low.copy(), high.copy()]
        return
    current[0] = current[0] + count
    current[1] = current[1] + total
    current[2] = np.fmin(current[2], low)
    current[3] = np.fmax(current[3], high)


def rollups_merge(
    layout: FrameLayout, resolution: int, bucket: datetime, new: dict[int, list[np.ndarray]]
) -> None:
    """Merge per-bucket partial aggregates ``[count, sum, min, max]`` into rollup frames."""
    current = _rollups_locked(layout, resolution, bucket, list(new))
    compress = compression_enabled()
    to_create: list[Frame] = []
    created: dict[int, list[np.ndarray]] = {}
    to_update: list[tuple] = []
    for metric_id, (count, total, low, high) in new.items():
        held = current.get(metric_id)
        if held is not None:
            count_0, total_0, low_0, high_0 = held[1]
            count = count_0 + count
            total = total_0 + total
            low = np.fmin(low_0, low)
            high = np.fmax(high_0, high)
        arrays = [
            count.astype(COUNT_DTYPE, copy=False),
            total.astype(SUM_DTYPE, copy=False),
            low.astype(VALUE_DTYPE, copy=False),
            high.astype(VALUE_DTYPE, copy=False),
        ]
        blobs = [frame_bytes(a, compress=compress) for a in arrays]
        entities_sum, entities_count = entity_means_sum(count, total)
        if held is None:
            to_create.append(
                Frame(
                    metric_id=metric_id,
                    layout=layout,
                    resolution=resolution,
                    ts=bucket,
                    count=blobs[0],
                    sum=blobs[1],
                    min=blobs[2],
                    max=blobs[3],
                    entities_sum=entities_sum,
                    entities_count=entities_count,
                )
            )
            created[metric_id] = arrays
        else:
            to_update.append((metric_id, held[0], arrays, blobs, entities_sum, entities_count))
    frames_insert(to_create)
    if connection.vendor == "postgresql" and resolution == MINUTE:
        rollups_remember_created(layout.pk, resolution, bucket, created)
    if to_update:
        _rollups_update(layout, resolution, bucket, to_update)


def _rollups_locked(
    layout: FrameLayout, resolution: int, bucket: datetime, metric_ids: list[int]
) -> dict[int, tuple[int, list[np.ndarray]]]:
    """Lock the bucket's existing rollups; ``{metric id: (frame id, [count, sum, min, max])}``.
    On PostgreSQL the minute tier's arrays this process committed are not read back
    (``store.frame_memo``)."""
    dtypes = (COUNT_DTYPE, SUM_DTYPE, VALUE_DTYPE, VALUE_DTYPE)
    if connection.vendor == "postgresql" and resolution == MINUTE:
        return rollups_locked(layout.pk, resolution, bucket, metric_ids, dtypes)
    frames = Frame.objects.select_for_update().filter(
        layout=layout, resolution=resolution, ts=bucket, metric_id__in=metric_ids
    )
    return {
        f.metric_id: (
            f.pk,
            [
                frame_array(blob, dtype)
                for blob, dtype in zip((f.count, f.sum, f.min, f.max), dtypes, strict=True)
            ],
        )
        for f in frames
    }


_ROLLUP_FIELDS = ["count", "sum", "min", "max", "entities_sum", "entities_count"]
_COPY_COLUMNS = (
    ("metric_id", "int8"),
    ("layout_id", "int8"),
    ("resolution", "int4"),
    ("ts", "timestamptz"),
    ("values", "bytea"),
    ("count", "bytea"),
    ("sum", "bytea"),
    ("min", "bytea"),
    ("max", "bytea"),
    ("entities_sum", "float8"),
    ("entities_count", "int4"),
    ("source_id", "int8"),
)


def frames_insert(frames: list[Frame]) -> None:
    """Insert new frames. On PostgreSQL one binary ``COPY``: ``bulk_create`` would send each
    array as hex SQL text (twice its size, parsed back by the server). Elsewhere
    ``bulk_create``. Frames inserted by ``COPY`` get no primary key back; none is needed."""
    if not frames:
        return
    if connection.vendor != "postgresql":
        Frame.objects.bulk_create(frames)
        return
    import psycopg

    table = connection.ops.quote_name(Frame._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(name) for name, _ in _COPY_COLUMNS)
    attributes = [name for name, _ in _COPY_COLUMNS]
    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as cursor:
        with cursor.copy(f"COPY {table} ({columns}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types([kind for _, kind in _COPY_COLUMNS])
            for frame in frames:
                copy.write_row([_copy_value(getattr(frame, name)) for name in attributes])


def _copy_value(value):
    return bytes(value) if isinstance(value, memoryview | bytearray) else value


def _rollups_update(
    layout: FrameLayout, resolution: int, bucket: datetime, updates: list[tuple]
) -> None:
    """Write the merged rollup arrays back: ``(metric id, frame id, arrays, blobs, entities
    sum, entities count)`` each.

    On PostgreSQL one prepared UPDATE per frame, pipelined, with the arrays as binary bytea
    parameters (Django's ``bulk_update`` builds a CASE expression per column and sends the
    arrays as escaped SQL text, which cost ~90% of a 10,240-card tick); each returns the row's
    new version, so the minute tier's arrays can be held for the next merge. Elsewhere (SQLite,
    the demo) ``bulk_update``.
    """
    if connection.vendor != "postgresql":
        frames = []
        for _, frame_id, _, blobs, entities_sum, entities_count in updates:
            frame = Frame(pk=frame_id, entities_sum=entities_sum, entities_count=entities_count)
            frame.count, frame.sum, frame.min, frame.max = blobs
            frames.append(frame)
        Frame.objects.bulk_update(frames, _ROLLUP_FIELDS)
        return
    import psycopg

    table = connection.ops.quote_name(Frame._meta.db_table)
    sql = (
        f'UPDATE {table} SET "count" = %b, "sum" = %b, "min" = %b, "max" = %b, '
        '"entities_sum" = %s, "entities_count" = %s WHERE "id" = %s RETURNING xmin::text'
    )
    rows = [(*blobs, es, ec, frame_id) for _, frame_id, _, blobs, es, ec in updates]
    connection.ensure_connection()
    # A server-side-binding cursor on Django's own connection: same transaction.
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.executemany(sql, rows, returning=True)
        versions = []
        while True:
            versions.append(cursor.fetchone()[0])
            if not cursor.nextset():
                break
    if resolution == MINUTE:
        rollups_remember(
            layout.pk,
            resolution,
            bucket,
            [
                (metric_id, frame_id, version, arrays)
                for (metric_id, frame_id, arrays, *_), version in zip(
                    updates, versions, strict=True
                )
            ],
        )


def entity_means_sum(count: np.ndarray, total: np.ndarray) -> tuple[float, int]:
    """Sum over entities of each one's bucket mean, and how many had a value."""
    present = count > 0
    means = total[present] / count[present]
    return float(means.sum(dtype=np.float64)), int(present.sum())
