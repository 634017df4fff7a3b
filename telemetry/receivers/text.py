"""The Prometheus text receiver: one exposition pushed (or scraped) from dcgm-exporter or
npu-exporter, parsed and mapped here, then handed to the one ingest pipeline
(:func:`telemetry.ingest.pipeline.ingest_mapping_report`) like every other exporter path.
"""

from __future__ import annotations

from django.conf import settings

from telemetry.catalogue.limits import check_text
from telemetry.errors import IngestionError
from telemetry.families.exposition import (
    PrometheusMappingError,
    PrometheusParseError,
    map_exposition,
)
from telemetry.ingest.pipeline import (
    SOURCES,
    cluster_for_ingest,
    host_chain,
    ingest_mapping_report,
    parse_limits,
)

# What the scraper reads at most from one exporter (the same as a push may send).
MAX_BODY_BYTES = settings.INGEST_MAX_BODY_BYTES


def ingest_prometheus_text(
    *,
    text: str,
    cluster_name: str,
    node: str | None,
    source: str,
    scrape_time: float,
    provenance: int | None = None,
    instance: str | None = None,
) -> dict:
    """Parse, map and store one exposition; returns accepted/mapped/dropped counts.

    Everything is checked before anything is registered or written: the parse caps, names,
    labels, the sample times and values (``telemetry.catalogue.limits``, the same as JSON
    batches) and the registry caps. A refused push registers no metric, node, card or entity.
    ``source`` is the exporter flavour; ``provenance`` who sent it (a ``SampleSource`` id);
    ``instance`` the scraped target's ``host:port``, the ``instance`` label of samples that
    carry none (as Prometheus sets it).
    """
    if source not in SOURCES:
        raise IngestionError(f"source must be one of {', '.join(SOURCES)}", field="source")
    if node is not None:
        check_text(node, field="node", max_chars=200)
    cluster = cluster_for_ingest(cluster_name)
    try:
        report = map_exposition(
            text,
            source=source,
            default_host=node,
            scrape_time=scrape_time,
            limits=parse_limits(),
            host_chain=host_chain(cluster),
            target_labels={"instance": instance} if instance else None,
        )
    except (PrometheusParseError, PrometheusMappingError) as exc:
        reason = "no_host" if isinstance(exc, PrometheusMappingError) else "invalid_body"
        raise IngestionError(exc.message, row=exc.line, field="body", reason=reason) from exc
    return ingest_mapping_report(report, cluster=cluster, provenance=provenance)
