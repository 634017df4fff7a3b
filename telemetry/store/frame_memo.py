"""Minute rollups a writing process already holds: lock the rows, read back only what changed.

(Also the layouts it registered: a layout row never changes once created, so a writer looks
it up once per process instead of once per kind and tick.)

A twin tick folds its frames into the open minute's rollup of every metric: read the arrays
under a row lock, merge, write them back. Reading them back is half of that (~14 MB per
10,240-card tick), and a resident writer wrote them itself one tick before. So on PostgreSQL
the writer keeps the arrays it committed, keyed by (layout, resolution, metric), with the
frame's id and its row version (``xmin``, the transaction that wrote the tuple, which every
UPDATE changes). The next merge still locks the rows (``FOR UPDATE``) but reads only ids and
versions; a row whose version is not the one remembered (another process wrote it, a
rollback, a new bucket) has its arrays read as before. Entries are stored only when the
writing transaction commits (``on_commit``), so an uncommitted merge is never reused.
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

import numpy as np
from django.db import connection, transaction

from telemetry.models import Frame, FrameLayout
from telemetry.store.frame_codec import frame_array

Arrays = list[np.ndarray]  # [count, sum, min, max]
# (layout id, resolution, metric id) -> (bucket, frame id, row version, arrays): one bucket
# per series, the newest one written, so the memory is one rollup per metric and layout.
_HELD: dict[tuple[int, int, int], tuple[datetime, int, str, Arrays]] = {}
_LOCK = threading.Lock()
_KEEP = timedelta(hours=1)


def rollups_locked(
    layout_id: int,
    resolution: int,
    bucket: datetime,
    metric_ids: list[int],
    dtypes: tuple[np.dtype, np.dtype, np.dtype, np.dtype],
) -> dict[int, tuple[int, Arrays]]:
    """Lock the bucket's rollup rows of ``metric_ids``; ``{metric id: (frame id, arrays)}``.

    PostgreSQL only (callers use the ORM elsewhere). Arrays come from what this process
    committed when the row is still that version, otherwise from the database.
    """
    table = connection.ops.quote_name(Frame._meta.db_table)
    import psycopg

    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(
            f"SELECT id, metric_id, xmin::text FROM {table} WHERE layout_id = %s "
            "AND resolution = %s AND ts = %s AND metric_id = ANY(%s) FOR UPDATE",
            (layout_id, resolution, bucket, metric_ids),
        )
        rows = cursor.fetchall()
        out: dict[int, tuple[int, Arrays]] = {}
        missing: dict[int, int] = {}
        with _LOCK:
            for frame_id, metric_id, version in rows:
                held = _HELD.get((layout_id, resolution, metric_id))
                if held is not None and held[:3] == (bucket, frame_id, version):
                    out[metric_id] = (frame_id, held[3])
                else:
                    missing[frame_id] = metric_id
        if missing:
            cursor.execute(
                f'SELECT id, "count", "sum", "min", "max" FROM {table} WHERE id = ANY(%s)',
                (list(missing),),
                binary=True,
            )
            for frame_id, *blobs in cursor.fetchall():
                arrays = [frame_array(b, t) for b, t in zip(blobs, dtypes, strict=True)]
                out[missing[frame_id]] = (frame_id, arrays)
    return out


def rollups_remember(
    layout_id: int,
    resolution: int,
    bucket: datetime,
    written: list[tuple[int, int, str, Arrays]],
) -> None:
    """Hold ``(metric id, frame id, row version, arrays)`` once the transaction commits."""

    def hold() -> None:
        with _LOCK:
            for metric_id, frame_id, version, arrays in written:
                _HELD[(layout_id, resolution, metric_id)] = (bucket, frame_id, version, arrays)
            # Series nobody writes any more (a deleted run, a stopped twin) are let go.
            stale = [key for key, held in _HELD.items() if held[0] < bucket - _KEEP]
            for key in stale:
                del _HELD[key]

    transaction.on_commit(hold)


def rollups_remember_created(
    layout_id: int, resolution: int, bucket: datetime, created: dict[int, Arrays]
) -> None:
    """Hold rollups just inserted (``COPY`` returns no ids): read their ids and versions."""
    if not created:
        return
    table = connection.ops.quote_name(Frame._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT metric_id, id, xmin::text FROM {table} WHERE layout_id = %s "
            "AND resolution = %s AND ts = %s AND metric_id = ANY(%s)",
            (layout_id, resolution, bucket, list(created)),
        )
        rows = cursor.fetchall()
    rollups_remember(
        layout_id,
        resolution,
        bucket,
        [(metric, frame_id, version, created[metric]) for metric, frame_id, version in rows],
    )


def rollups_forget() -> None:
    """Drop everything held (tests; the next merge reads the arrays from the database)."""
    with _LOCK:
        _HELD.clear()
        _LAYOUTS.clear()


# (cluster id, kind, keys digest) -> layout, held once its row is committed.
_LAYOUTS: dict[tuple[int, str, str], FrameLayout] = {}


def layout_held(cluster_id: int, kind: str, digest: str) -> FrameLayout | None:
    with _LOCK:
        return _LAYOUTS.get((cluster_id, kind, digest))


def layout_hold(layout: FrameLayout) -> None:
    """Hold ``layout`` once the transaction that found or created it commits."""
    key = (layout.cluster_id, layout.kind, layout.keys_digest)

    def hold() -> None:
        with _LOCK:
            _LAYOUTS[key] = layout

    transaction.on_commit(hold)


def layout_forget(layout_id: int) -> None:
    """Let a layout go (its row is gone: the next write registers it again)."""
    with _LOCK:
        for key in [k for k, v in _LAYOUTS.items() if v.pk == layout_id]:
            del _LAYOUTS[key]
