"""Rows that need no exporter mapping, into the store: the pipeline's step for catalogue samples.

A JSON batch (already resolved to metric and entity ids), the scraper's own ``exporter_scrape_*``
gauges and the digital twin's sparse rows and dense frames are written here; mapped exporter
reports go through :func:`telemetry.ingest.pipeline.ingest_mapping_report`, which ends in the
same store function. Receivers never call the store's writers themselves
(``tests/test_architecture.py``), so whatever the wire, samples reach the store through this
floor, with the provenance the receiver names.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from telemetry.models import FrameLayout
from telemetry.store.frames import frames_write_many, layout_for_keys
from telemetry.store.samples import SampleRow, StoreResult, samples_write

__all__ = ["SampleRow", "StoreResult", "frames_store", "layout_for_keys", "rows_store"]


def rows_store(rows: Sequence[SampleRow], *, provenance: int | None = None) -> StoreResult:
    """Store ``(metric_id, entity_id, seconds, value)`` rows (``store.samples.samples_write``:
    duplicates skipped, late rows folded into rollups); ``provenance`` is who sent them."""
    return samples_write(rows, provenance=provenance)


def frames_store(
    *,
    layout: FrameLayout,
    batches: list[tuple[float, dict[int, np.ndarray]]],
    provenance: int | None = None,
) -> int:
    """Store dense per-kind frames (``store.frames.frames_write_many``); returns how many."""
    return frames_write_many(layout=layout, batches=batches, provenance=provenance)
