"""Telemetry's ingest floor: the one pipeline every receiver (``telemetry.receivers``) calls.

``pipeline`` takes a mapped exporter report (text push, scrape, remote-write) and registers,
checks and stores it in one transaction (``ingest_mapping_report``); ``rows`` stores catalogue
rows that need no mapping (a JSON batch, the scraper's own gauges, the twin's rows and frames);
``attribution`` keeps who held each card by the exporters' labels, ``scheduler_attribution`` by
the workload scheduler's allocations; ``health`` copies a card's health onto its inventory row
(the pipeline and the PromQL sync); ``idempotency`` runs a request once per ``Idempotency-Key``.
Below it: read, store, catalogue and exporter families; above it only the receivers and the
doors (api, tasks, admin). See ``docs/architecture.md`` §2 and §3.
"""
