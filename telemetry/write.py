"""Telemetry's write API for other apps (the twin's tick writer, gap and lag markers).

Writes go through the same store functions the ingestion endpoints use, so every reader sees
one store whatever the source.
"""

from telemetry.catalogue import catalogue_sync
from telemetry.frames import frames_write_many, layout_for_keys
from telemetry.registry import entities_resolve, metrics_by_name
from telemetry.store import samples_write

__all__ = [
    "catalogue_sync",
    "entities_resolve",
    "frames_write_many",
    "layout_for_keys",
    "metrics_by_name",
    "samples_write",
]
