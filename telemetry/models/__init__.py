"""Telemetry: the metric catalogue, entities, the store (samples, frames, rollups), exporter
targets and process heartbeats. Only the ``telemetry`` app imports the store's models."""

from telemetry.models.attribution import AttributionInterval, AttributionKind
from telemetry.models.counters import StoreCounter
from telemetry.models.datasources import PromQLDataSource, RemoteWriteStatus
from telemetry.models.exporters import ExporterTarget
from telemetry.models.frames import Frame, FrameLayout
from telemetry.models.heartbeats import Heartbeat
from telemetry.models.provenance import SampleSource
from telemetry.models.refusals import IngestRefusal
from telemetry.models.samples import (
    Entity,
    EntityKind,
    IngestionBatch,
    MetricDefinition,
    Rollup,
    RollupWatermark,
    Sample,
)
from telemetry.models.serving import ServingBinding

__all__ = [
    "AttributionInterval",
    "AttributionKind",
    "Entity",
    "EntityKind",
    "ExporterTarget",
    "Frame",
    "FrameLayout",
    "Heartbeat",
    "IngestRefusal",
    "IngestionBatch",
    "MetricDefinition",
    "PromQLDataSource",
    "RemoteWriteStatus",
    "Rollup",
    "RollupWatermark",
    "Sample",
    "SampleSource",
    "ServingBinding",
    "StoreCounter",
]
