"""PromQL as a data source: a cluster's telemetry read from a Prometheus-compatible query API
(Prometheus, Thanos, VictoriaMetrics, Mimir) instead of the portal's store.

``client`` is the one place that makes outbound HTTP requests (``outbound_get``);
``translate`` turns catalogue metrics into exporter-family selectors and result series back
into catalogue samples through the ingestion mapping; ``reads`` implements the read API's
functions for a data source; ``backend`` is the ``ReadBackend`` :mod:`telemetry.read` chooses
for a cluster with an enabled source.
"""
