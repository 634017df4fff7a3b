"""The PromQL HTTP client. Every outbound request goes through :func:`outbound_get`, which
applies the portal's outbound-address policy (refuse loopback/private/link-local addresses
unless allow-listed); nothing else in the package opens a connection."""

from __future__ import annotations

import http.client
import math
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from datetime import datetime

from django.utils.translation import gettext_lazy as _
from rest_framework.exceptions import APIException

from cluster_portal.web.outbound import outbound_opener, refused_by_policy

__all__ = ["DataSourceUnavailable", "PromQLClient", "outbound_get"]

MAX_RESPONSE_BYTES = 64 * 1024 * 1024
USER_AGENT = "cluster-portal-promql/1"


class DataSourceUnavailable(APIException):
    """The cluster's PromQL server did not answer usefully (down, slow, refused, bad reply).

    The API answers 503 in the one error body, pages show "data source unavailable"
    (``telemetry.promql.middleware``), gates measure Inconclusive: never a 500 and never "no
    problem"."""

    status_code = 503
    default_code = "data_source_unavailable"

    def __init__(self, cluster: str, reason: str) -> None:
        message = _("Data source unavailable for cluster %(cluster)s: %(reason)s") % {
            "cluster": cluster,
            "reason": reason,
        }
        super().__init__(str(message), self.default_code)
        self.cluster = cluster
        self.reason = reason


def outbound_get(
    url: str, *, params: dict, headers: dict[str, str], timeout: float
) -> tuple[int, bytes]:
    """GET ``url`` and return ``(status, body)``; the portal's one outbound call for PromQL.

    It goes through the portal's outbound policy (``cluster_portal.web.outbound``): the
    address actually dialled — after DNS and on every redirect — must be public or inside
    ``OUTBOUND_ALLOWED_NETWORKS``, so a data-source URL cannot reach the metadata service or
    the portal's own network. The body is capped at ``MAX_RESPONSE_BYTES``; ``timeout``
    bounds connect and each read. Raises ``OutboundRefused``, ``OSError`` (``URLError``,
    timeouts) or ``ValueError`` (body too large).
    """
    request = urllib.request.Request(
        f"{url}?{urllib.parse.urlencode(params)}",
        headers={"User-Agent": USER_AGENT, "Accept": "application/json", **headers},
    )
    try:
        response = outbound_opener().open(request, timeout=timeout)
    except urllib.error.HTTPError as error:  # 4xx/5xx: Prometheus explains in its JSON body
        response = error
    with response:
        body = response.read(MAX_RESPONSE_BYTES + 1)
        if len(body) > MAX_RESPONSE_BYTES:
            raise ValueError(f"response larger than {MAX_RESPONSE_BYTES:,} bytes")
        return response.status if hasattr(response, "status") else response.code, body


@dataclass(frozen=True)
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
        import json

        params = {**params, "timeout": f"{self.timeout:g}s"}
        try:
            status, body = outbound_get(
                self.base + path, params=params, headers=self.headers, timeout=self.timeout
            )
        except Exception as exc:  # noqa: BLE001 - every failure is "unavailable", classified
            if refused_by_policy(exc):
                reason = f"{self.base}: refused by policy (OUTBOUND_ALLOWED_NETWORKS)"
            elif isinstance(exc, TimeoutError) or isinstance(
                getattr(exc, "reason", None), TimeoutError
            ):
                reason = f"no answer from {self.base} within {self.timeout:g} s"
            elif isinstance(exc, (OSError, ValueError, http.client.HTTPException)):
                reason = f"{self.base}: {getattr(exc, 'reason', None) or exc}"
            else:
                raise
            raise DataSourceUnavailable(self.cluster, reason) from None
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        if not isinstance(payload, dict) or payload.get("status") != "success":
            detail = payload.get("error") if isinstance(payload, dict) else body[:200]
            raise DataSourceUnavailable(self.cluster, f"HTTP {status} from {self.base}: {detail}")
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
            if math.isfinite(value):
                points.append((ts, value))
        out.append(ResultSeries(dict(item.get("metric") or {}), points))
    return out
