"""The PromQL HTTP client. Every outbound request goes through :func:`outbound_get`, which
applies the portal's outbound-address policy (refuse loopback/private/link-local addresses
unless allow-listed); nothing else in the package opens a connection."""

from __future__ import annotations

import http.client
import urllib.parse
from dataclasses import dataclass
from datetime import datetime
from math import isfinite

import orjson
from django.conf import settings
from django.utils.translation import gettext_lazy as _
from rest_framework.exceptions import APIException

from cluster_portal.web.outbound import (
    OutboundRefused,
    OutboundTimeout,
    ResponseTooLarge,
    outbound_request,
)
from telemetry.read.promql.guard import SourceBusy, note_failure, read_slot

__all__ = ["AnswerTooLarge", "DataSourceUnavailable", "PromQLClient", "outbound_get"]

USER_AGENT = "cluster-portal-promql/1"


class DataSourceUnavailable(APIException):
    """The cluster's PromQL server did not answer usefully (down, slow, refused, bad reply).

    The API answers 503 in the one error body, pages show "data source unavailable"
    (``telemetry.read.promql.middleware``), gates measure Inconclusive: never a 500 and never "no
    problem". ``reason`` is safe for anyone (what went wrong, in a few words: no address,
    error number or answer); ``staff_detail`` adds the source URL and what it said, and is
    shown to signed-in staff only (``cluster_portal.web.errors``) and kept as the source's
    last error."""

    status_code = 503
    default_code = "data_source_unavailable"

    def __init__(self, cluster: str, reason: str, detail: str = "") -> None:
        message = _("Data source unavailable for cluster %(cluster)s: %(reason)s") % {
            "cluster": cluster,
            "reason": reason,
        }
        super().__init__(str(message), self.default_code)
        self.cluster = cluster
        self.reason = reason
        self.staff_detail = detail or reason


class AnswerTooLarge(DataSourceUnavailable):
    """The answer passed ``PROMQL_MAX_RESPONSE_BYTES``: a reader that can ask in pages
    (the inventory sync) splits the query and asks again."""


def outbound_get(
    url: str, *, params: dict, headers: dict[str, str], timeout: float
) -> tuple[int, bytes]:
    """GET ``url`` and return ``(status, body)``; the portal's one outbound call for PromQL.

    It goes through the portal's outbound policy (``cluster_portal.web.outbound``): the
    address actually dialled — after DNS and on every redirect — must be public or inside
    ``OUTBOUND_ALLOWED_NETWORKS``, so a data-source URL cannot reach the metadata service or
    the portal's own network. ``timeout`` is one wall-clock deadline over connect, headers
    and body; the body is capped at ``PROMQL_MAX_RESPONSE_BYTES``. Raises
    ``OutboundRefused``, ``OutboundTimeout``, ``ResponseTooLarge`` or ``OSError``.
    """
    answer = outbound_request(
        f"{url}?{urllib.parse.urlencode(params)}",
        deadline_seconds=timeout,
        max_bytes=settings.PROMQL_MAX_RESPONSE_BYTES,
        headers={"User-Agent": USER_AGENT, "Accept": "application/json", **headers},
    )
    return answer.status, answer.body


# Built once per answered series (141,000 for one rack page at 102,400 cards): slots and no
# frozen-instance __setattr__ cost; never mutated after the answer is read.
@dataclass(slots=True)
class ResultSeries:
    """One series of a query answer: its labels and ``(unix seconds, value)`` points."""

    labels: dict[str, str]
    points: list[tuple[float, float]]


class PromQLClient:
    """``/api/v1/query`` and ``/api/v1/query_range`` against one data source."""

    def __init__(
        self, *, cluster: str, url: str, bearer_token: str = "", timeout: float = 5.0
    ) -> None:
        self.cluster = cluster
        self.base = url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {bearer_token}"} if bearer_token else {}
        self.timeout = timeout

    def query(self, expr: str, *, at: datetime) -> list[ResultSeries]:
        return self._get("/api/v1/query", {"query": expr, "time": f"{at.timestamp():.3f}"})

    def query_range(
        self, expr: str, *, start: datetime, end: datetime, step: float
    ) -> list[ResultSeries]:
        params = {
            "query": expr,
            "start": f"{start.timestamp():.3f}",
            "end": f"{end.timestamp():.3f}",
            "step": f"{max(step, 0.001):g}",
        }
        return self._get("/api/v1/query_range", params)

    def _get(self, path: str, params: dict) -> list[ResultSeries]:
        def unavailable(reason: str, detail: str) -> DataSourceUnavailable:
            return DataSourceUnavailable(self.cluster, reason, f"{self.base}: {detail}")

        try:
            with read_slot(self.base, self.timeout) as seconds:
                query = {**params, "timeout": f"{seconds:g}s"}
                try:
                    status, body = outbound_get(
                        self.base + path, params=query, headers=self.headers, timeout=seconds
                    )
                except OutboundRefused:
                    raise unavailable(
                        "refused by policy (OUTBOUND_ALLOWED_NETWORKS)", "refused by policy"
                    ) from None
                except OutboundTimeout:
                    note_failure(self.base)
                    raise unavailable(
                        f"no answer within {seconds:.3g} s",
                        f"no complete answer in {seconds:.3g} s",
                    ) from None
                except ResponseTooLarge as exc:
                    raise AnswerTooLarge(
                        self.cluster,
                        "the answer is larger than PROMQL_MAX_RESPONSE_BYTES",
                        f"{self.base}: {exc}",
                    ) from None
                except (OSError, http.client.HTTPException) as exc:
                    note_failure(self.base)
                    raise unavailable(
                        "cannot connect to it", f"{type(exc).__name__}: {exc}"
                    ) from None
        except SourceBusy as exc:
            raise unavailable(exc.reason, exc.reason) from None
        try:
            # orjson: a rack page's answer at 100k cards is tens of MB of JSON, and the
            # standard decoder took a sixth of the hardware page (1.5 of 9.9 s, profiled).
            payload = orjson.loads(body)
        except ValueError:  # orjson.JSONDecodeError is a ValueError
            payload = None
        if not isinstance(payload, dict) or payload.get("status") != "success":
            said = payload.get("error") if isinstance(payload, dict) else body[:200]
            raise unavailable(f"HTTP {status}, no usable answer", f"HTTP {status}: {said}")
        return _series(payload.get("data") or {})


def _series(data: dict) -> list[ResultSeries]:
    kind, result = data.get("resultType"), data.get("result") or []
    out: list[ResultSeries] = []
    for item in result:
        if kind == "vector":
            raw = [item.get("value")]
        elif kind == "matrix":
            raw = item.get("values") or []
        else:
            continue
        points = []
        for pair in raw:
            try:
                ts, value = float(pair[0]), float(pair[1])
            except (TypeError, ValueError, IndexError):
                continue
            if isfinite(value):
                points.append((ts, value))
        labels = item.get("metric")
        out.append(ResultSeries(labels if isinstance(labels, dict) else {}, points))
    return out
