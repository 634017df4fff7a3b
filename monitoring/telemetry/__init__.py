"""The telemetry store's write path (raw samples + rollups) and its helpers."""
