"""Telemetry's catalogue floor: names → ids, and the bookkeeping every path shares.

``metrics`` (the portal's own metric catalogue), ``registry`` (metrics, entities and cards by
name, registering what is new under the caps), ``entities`` (entity rows), ``known`` (the
per-process id memo), ``limits`` (the caps and checks every ingestion path shares), ``refusals``
(counted refusals per cluster, path and reason), ``heartbeats`` (worker liveness),
``serving_registry`` and ``serving_bindings`` (serving endpoints and the workloads bound to
them), ``vouching`` (who vouched for a sample source). Above the exporter families, below the
store, read, the ingest pipeline and the receivers. See ``docs/architecture.md`` §2.
"""
