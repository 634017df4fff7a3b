"""Scrape mode: the portal fetches an exporter's ``/metrics`` itself and ingests the text.

The text goes through :func:`ingest_prometheus_text`, the same mapping path pushed text
uses, so a scraped and a pushed exposition produce the same samples. Every scrape also writes
``exporter_scrape_up`` (1/0) and ``exporter_scrape_duration_seconds`` for the target, so a
failing exporter is visible in telemetry and alert rules, not only on the operator page.

Expected failures (HTTP error, timeout, refused connection, non-UTF-8 body, malformed text)
are recorded on the target and never raised: a scrape that fails writes nothing of the
exposition, because ingestion is one transaction that is rolled back as a whole.
"""

from __future__ import annotations

import http.client
import logging
import time
import urllib.parse
from datetime import UTC, datetime, timedelta

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from cluster_portal.web.outbound import (
    REFUSED,
    OutboundRefused,
    OutboundTimeout,
    ResponseTooLarge,
    outbound_request,
)
from telemetry.catalogue.metrics import CORE_METRICS, catalogue_sync
from telemetry.catalogue.refusals import refusal_record_error, refusals_record_reply
from telemetry.catalogue.registry import entities_resolve, metrics_by_name
from telemetry.errors import IngestionError
from telemetry.ingest.rows import rows_store
from telemetry.models import EntityKind, ExporterTarget, IngestRefusal, MetricDefinition
from telemetry.read.local.exporters import due_before
from telemetry.receivers.text import MAX_BODY_BYTES, ingest_prometheus_text
from telemetry.store.provenance import source_exporter

logger = logging.getLogger(__name__)

UP_METRIC = "exporter_scrape_up"
DURATION_METRIC = "exporter_scrape_duration_seconds"
# What Prometheus itself asks for when it wants the classic text format, not OpenMetrics
# (which the parser rejects for plain exporter text).
ACCEPT = "text/plain;version=0.0.4;q=1.0, text/plain;q=0.5"
USER_AGENT = "cluster-portal-scraper/1"
MAX_ERROR_CHARS = 500
# The most one scrape task may run: the longest fetch a target may ask for (60 s, one
# wall-clock deadline over connect, headers and body) plus time to ingest what came back.
# The task's Celery time limits are these; the claim's lease is the hard one, so a target is
# never claimed again while a scrape of it can still be running (a killed worker's lease
# lapses after it, and the target is scraped again).
SCRAPE_SOFT_TIME_LIMIT_SECONDS = 90
SCRAPE_TIME_LIMIT_SECONDS = 100


def target_instance(url: str) -> str:
    """The ``instance`` label Prometheus gives a target's samples: the URL's ``host:port``
    (``host`` alone when the URL names no port, as Prometheus 3 does; credentials dropped)."""
    parts = urllib.parse.urlsplit(url)
    return parts.netloc.rpartition("@")[2]


class ScrapeFailed(Exception):
    """The exporter could not be fetched; ``str()`` is the one-line message operators see."""


def exporter_scrape(*, target: ExporterTarget, now: float | None = None) -> dict:
    """Fetch ``target.url``, ingest it, record the outcome on the target; never raises for
    expected failures.

    ``now`` (unix seconds) is the scrape time: samples without their own timestamp get it,
    and the target's ``last_*`` fields are set to it. Returns ``{"target", "ok", "error",
    "counts", "duration_seconds"}``.
    """
    scrape_time = time.time() if now is None else now
    at = datetime.fromtimestamp(scrape_time, tz=UTC)
    started = time.monotonic()
    counts: dict = {}
    error = ""
    try:
        text = _fetch(target.url, target.timeout_seconds)
        # Ingestion and the success record commit together: the page never shows a success
        # whose samples are not there, nor samples without the success.
        with transaction.atomic():
            counts = ingest_prometheus_text(
                text=text,
                cluster_name=target.cluster.name,
                node=target.node or None,
                source=target.kind,
                scrape_time=scrape_time,
                provenance=source_exporter(target),
                # A target that names its node keeps that name for the endpoint (the
                # operator said which host it is); otherwise, as Prometheus does, its samples
                # are the URL's host:port.
                instance=None if target.node else target_instance(target.url),
            )
            _record(target, at=at, ok=True, counts=counts, duration=time.monotonic() - started)
    except ScrapeFailed as exc:
        error = str(exc)
    except IngestionError as exc:
        error = f"line {exc.row}: {exc.message}" if exc.row is not None else exc.message
        refusal_record_error(
            cluster_name=target.cluster.name, path=IngestRefusal.Path.SCRAPE, error=exc
        )
    except Exception as exc:
        # A bug or a database error, not the exporter's fault: still show it on the target
        # (best effort), then let the caller see the traceback.
        error = f"internal error: {type(exc).__name__}: {exc}"
        try:
            _record_failure(target, at=at, error=error, started=started)
        except Exception:
            logger.exception("could not record the failed scrape of %s", target.name)
        raise
    duration = time.monotonic() - started
    if counts:
        refusals_record_reply(
            cluster_name=target.cluster.name, path=IngestRefusal.Path.SCRAPE, reply=counts
        )
    if error:
        _record_failure(target, at=at, error=error, started=started)
        logger.info("scrape of %s failed: %s", target.name, target.last_error)
    return {
        "target": target.name,
        "ok": not error,
        "error": target.last_error if error else "",
        "counts": counts,
        "duration_seconds": duration,
    }


def exporter_target_claim(*, target_id: int, now: datetime | None = None) -> ExporterTarget | None:
    """Claim a due, enabled target for one scrape; ``None`` if another worker got it first.

    The claim is one conditional UPDATE of ``last_attempt_at`` that only matches while the
    target is still due and no scrape of it is in flight, so of two workers racing for the
    same target exactly one updates a row; the other sees 0 rows and skips. The claim holds a
    lease (``scrape_lease_until``) until the scrape records its outcome, or at most
    ``SCRAPE_TIME_LIMIT_SECONDS``: a stuck target is never scraped twice at once, however
    many intervals pass. No lock is held during the fetch.
    """
    now = now or timezone.now()
    target = (
        ExporterTarget.objects.select_related("cluster").filter(pk=target_id, enabled=True).first()
    )
    if target is None:
        return None
    still_due = Q(last_attempt_at__isnull=True) | Q(
        last_attempt_at__lte=due_before(interval_seconds=target.interval_seconds, now=now)
    )
    not_in_flight = Q(scrape_lease_until__isnull=True) | Q(scrape_lease_until__lte=now)
    lease = now + timedelta(seconds=SCRAPE_TIME_LIMIT_SECONDS)
    claimed = (
        ExporterTarget.objects.filter(pk=target_id, enabled=True)
        .filter(still_due, not_in_flight)
        .update(last_attempt_at=now, scrape_lease_until=lease)
    )
    if not claimed:
        return None
    target.last_attempt_at = now
    target.scrape_lease_until = lease
    return target


def _fetch(url: str, timeout: float) -> str:
    """GET ``url`` within ``timeout`` seconds in total; the body as text, or ScrapeFailed.

    The deadline covers connect, headers and body (``outbound_request``): an exporter that
    trickles its answer is cut off at ``timeout``, not after each slow read.
    """
    scheme = urllib.parse.urlsplit(url).scheme
    if scheme not in ("http", "https"):
        raise ScrapeFailed(f"unsupported URL scheme {scheme!r} in {url} (use http or https)")
    try:
        # Guarded (cluster_portal.web.outbound): exporters on private networks must be
        # allow-listed in OUTBOUND_ALLOWED_NETWORKS; no environment proxy, only http/https.
        answer = outbound_request(
            url,
            deadline_seconds=timeout,
            max_bytes=MAX_BODY_BYTES,
            headers={"Accept": ACCEPT, "User-Agent": USER_AGENT},
        )
    except OutboundRefused:
        raise ScrapeFailed(f"{url}: {REFUSED}") from None
    except OutboundTimeout:
        raise ScrapeFailed(f"timed out after {timeout:g} s fetching {url}") from None
    except ResponseTooLarge:
        raise ScrapeFailed(
            f"response from {url} is larger than {MAX_BODY_BYTES // (1024 * 1024)} MiB"
        ) from None
    except ConnectionRefusedError:
        raise ScrapeFailed(f"connection refused by {url}") from None
    except (http.client.HTTPException, OSError) as exc:
        raise ScrapeFailed(f"fetching {url} failed: {type(exc).__name__}: {exc}") from None
    if not 200 <= answer.status < 300:
        # The status only: the reason phrase and body are the server's words, not ours.
        raise ScrapeFailed(f"HTTP {answer.status} from {url}")
    try:
        return answer.body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScrapeFailed(
            f"response from {url} is not UTF-8 (invalid byte at offset {exc.start})"
        ) from None


def _record_failure(target: ExporterTarget, *, at: datetime, error: str, started: float) -> None:
    with transaction.atomic():
        _record(target, at=at, ok=False, error=error, duration=time.monotonic() - started)


def _record(
    target: ExporterTarget,
    *,
    at: datetime,
    ok: bool,
    duration: float,
    counts: dict | None = None,
    error: str = "",
) -> None:
    """Write the outcome on the target and the two scrape samples. Caller owns the transaction."""
    # The outcome ends the claim's lease: the target may be claimed at its next interval.
    fields: dict = {"last_attempt_at": at, "scrape_lease_until": None}
    if ok:
        fields.update(last_success_at=at, last_counts=counts or {}, consecutive_failures=0)
    else:
        # One line, bounded: it is shown verbatim in a table cell.
        line = " ".join(error.split())
        if len(line) > MAX_ERROR_CHARS:
            line = line[: MAX_ERROR_CHARS - 1] + "…"
        fields.update(
            last_error_at=at,
            last_error=line,
            # F() so a concurrent admin scrape cannot lose an increment.
            consecutive_failures=F("consecutive_failures") + 1,
        )
    # update() rather than save(): an operator editing the target in the admin meanwhile
    # (URL, interval, enabled) must not be overwritten by the scrape's copy of the row.
    ExporterTarget.objects.filter(pk=target.pk).update(**fields)
    target.refresh_from_db(fields=[*fields])

    metrics = _scrape_metrics()
    entity_id = entities_resolve(target.cluster, [(EntityKind.EXPORTER, target.name)])[
        (EntityKind.EXPORTER, target.name)
    ]
    seconds = at.timestamp()
    rows_store(
        [
            (metrics[UP_METRIC].id, entity_id, seconds, 1.0 if ok else 0.0),
            (metrics[DURATION_METRIC].id, entity_id, seconds, round(duration, 6)),
        ]
    )


def _scrape_metrics() -> dict[str, MetricDefinition]:
    """The two scrape metrics, registering them if the catalogue was synced before they existed."""
    names = (UP_METRIC, DURATION_METRIC)
    metrics = metrics_by_name(names)
    if len(metrics) < len(names):
        catalogue_sync(tuple(entry for entry in CORE_METRICS if entry[0] in names))
        metrics = metrics_by_name(names)
    return metrics
