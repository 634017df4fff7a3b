"""Telemetry's store: sparse samples, dense frames, rollups, compaction, retention, provenance.

Only the telemetry app touches these tables and the frame bytes (``tests/test_architecture.py``
seals them); other apps write through ``telemetry.receivers.twin`` and read through
``telemetry.read``. See ``docs/architecture.md``.
"""
