"""Telemetry's receivers: one module per way data arrives, each calling the one ingest pipeline.

``text`` (a Prometheus exposition pushed or scraped), ``json_batch`` (catalogue samples as JSON),
``remote_write/`` (Prometheus remote-write 1.0: bounded decode, service), ``scrape`` (the portal
scraping exporter targets), ``twin`` (the digital twin's writer, the write API other apps use),
and ``promql_sync`` (cards and holders of a PromQL data source); the workload scheduler's sync
lives in the ``scheduling`` app and hands its allocations to
``telemetry.ingest.scheduler_attribution``. They parse and validate, then hand over to
``telemetry.ingest``; none calls the store's writers itself (``tests/test_architecture.py``).
Only ``api/``, ``tasks``, ``admin`` and ``views`` sit above them. See ``docs/architecture.md`` §2.
"""
