"""Telemetry's write API for other apps: the twin's tick writer, gap and lag markers.

Writes go through the same ingest step the ingestion endpoints use (``telemetry.ingest.rows``),
so every reader sees one store whatever the source. Everything written through this module is
the digital twin's: it is tagged with the twin's source here (``telemetry.store.provenance``),
so the simulation app never handles provenance and its rows and frames are what gates trust by
default.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from telemetry.catalogue.metrics import catalogue_sync
from telemetry.catalogue.registry import entities_resolve, metrics_by_name
from telemetry.catalogue.serving_registry import serving_catalogue_ensure
from telemetry.ingest.rows import SampleRow, StoreResult, frames_store, layout_for_keys, rows_store
from telemetry.models import FrameLayout
from telemetry.store.provenance import source_twin

__all__ = [
    "catalogue_sync",
    "entities_resolve",
    "frames_write_many",
    "layout_for_keys",
    "metrics_by_name",
    "samples_write",
    "serving_catalogue_ensure",
]


def samples_write(rows: Sequence[SampleRow]) -> StoreResult:
    """Store the twin's sparse rows (``ingest.rows.rows_store``), tagged as the twin's."""
    if not rows:
        return StoreResult(received=0, inserted=0)
    return rows_store(rows, provenance=source_twin())


def frames_write_many(
    *, layout: FrameLayout, batches: list[tuple[float, dict[int, np.ndarray]]]
) -> int:
    """Store the twin's dense frames (``telemetry.store.frames``), tagged as the twin's."""
    return frames_store(layout=layout, batches=batches, provenance=source_twin())
