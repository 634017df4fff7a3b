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
import urllib.error
import urllib.parse
import urllib.request
from datetime import UTC, datetime

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from cluster_portal.web.outbound import (
    REFUSED,
    OutboundRefused,
    outbound_opener,
    refused_by_policy,
)
from telemetry.catalogue import CORE_METRICS, catalogue_sync
from telemetry.errors import IngestionError
from telemetry.models import EntityKind, ExporterTarget, MetricDefinition
from telemetry.prometheus_ingest import MAX_BODY_BYTES, ingest_prometheus_text
from telemetry.registry import entities_resolve, metrics_by_name
from telemetry.selectors.exporters import due_before
from telemetry.store import samples_write

logger = logging.getLogger(__name__)

UP_METRIC = "exporter_scrape_up"
DURATION_METRIC = "exporter_scrape_duration_seconds"
# What Prometheus itself asks for when it wants the classic text format, not OpenMetrics
# (which the parser rejects for plain exporter text).
ACCEPT = "text/plain;version=0.0.4;q=1.0, text/plain;q=0.5"
USER_AGENT = "cluster-portal-scraper/1"
READ_CHUNK = 64 * 1024
MAX_ERROR_CHARS = 500

# Guarded (cluster_portal.web.outbound): exporters on private networks must be allow-listed in
# OUTBOUND_ALLOWED_NETWORKS; no environment proxy, only http/https, also through redirects.
_OPENER = outbound_opener()


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
            )
            _record(target, at=at, ok=True, counts=counts, duration=time.monotonic() - started)
    except ScrapeFailed as exc:
        error = str(exc)
    except IngestionError as exc:
        error = f"line {exc.row}: {exc.message}" if exc.row is not None else exc.message
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
    target is still due, so of two workers racing for the same target exactly one updates a
    row; the other sees 0 rows and skips. No lock is held during the fetch.
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
    claimed = (
        ExporterTarget.objects.filter(pk=target_id, enabled=True)
        .filter(still_due)
        .update(last_attempt_at=now)
    )
    if not claimed:
        return None
    target.last_attempt_at = now
    return target


def _fetch(url: str, timeout: float) -> str:
    """GET ``url`` within ``timeout`` seconds in total; the body as text, or ScrapeFailed."""
    scheme = urllib.parse.urlsplit(url).scheme
    if scheme not in ("http", "https"):
        raise ScrapeFailed(f"unsupported URL scheme {scheme!r} in {url} (use http or https)")
    request = urllib.request.Request(url, headers={"Accept": ACCEPT, "User-Agent": USER_AGENT})
    # urllib's timeout bounds each socket operation; a server trickling bytes could exceed it
    # many times over, so the whole read is bounded by a deadline too.
    deadline = time.monotonic() + timeout
    chunks: list[bytes] = []
    size = 0
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            while chunk := response.read(READ_CHUNK):
                size += len(chunk)
                if size > MAX_BODY_BYTES:
                    raise ScrapeFailed(f"response from {url} is larger than 20 MiB")
                if time.monotonic() > deadline:
                    raise TimeoutError
                chunks.append(chunk)
    except urllib.error.HTTPError as exc:
        exc.close()
        # The status only: the reason phrase and body are the server's words, not ours.
        raise ScrapeFailed(f"HTTP {exc.code} from {url}") from None
    except OutboundRefused:
        raise ScrapeFailed(f"{url}: {REFUSED}") from None
    except urllib.error.URLError as exc:
        if refused_by_policy(exc):
            raise ScrapeFailed(f"{url}: {REFUSED}") from None
        if isinstance(exc.reason, TimeoutError):
            raise ScrapeFailed(f"timed out after {timeout} s fetching {url}") from None
        if isinstance(exc.reason, ConnectionRefusedError):
            raise ScrapeFailed(f"connection refused by {url}") from None
        raise ScrapeFailed(f"cannot reach {url}: {exc.reason}") from None
    except TimeoutError:
        raise ScrapeFailed(f"timed out after {timeout} s fetching {url}") from None
    except (http.client.HTTPException, OSError) as exc:
        raise ScrapeFailed(f"fetching {url} failed: {type(exc).__name__}: {exc}") from None
    body = b"".join(chunks)
    try:
        return body.decode("utf-8")
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
    fields: dict = {"last_attempt_at": at}
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
    samples_write(
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
