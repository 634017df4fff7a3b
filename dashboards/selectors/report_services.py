"""The report's serving figures: percentiles that are percentiles, per service and pooled.

* **Percentiles** (TTFT, TPOT, end-to-end P50/P95/P99) come from the services' bucket-aware
  histograms merged over exactly the compared window (``telemetry.read.serving_windows``):
  a service's P99 is the 99th percentile of the window's requests, a cluster's headline P99
  the percentile of *all* its services' requests (every service's bucket increases summed),
  as ``histogram_quantile(q, sum by (le) (increase(x_bucket[w])))`` computes it. Their error
  is the histogram's: the value lies in the bucket holding the true quantile.
* **Approximation**: a service that has only stored per-step P99 values (no histogram in the
  window) shows their mean, labelled "mean of per-step P99 (approximation)": it is never
  judged against a target. A percentile over no requests says so and has no verdict.
* **Per service, side by side**: each service of the source and the target cluster, matched
  by name (the migration moves a service under its name), with its load (requests/s, tokens/s)
  and size (cards held) on each side, tokens/s per card held, and one verdict per operator
  target on each side.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from inventory.models import Cluster, Workload
from telemetry.models import EntityKind
from telemetry.read import entity_sums, serving_windows

# (target field on Workload, histogram figure key, stored per-step metric, label key)
TARGETS = (
    ("slo_ttft_ms", "ttft", "inference_ttft_p99_seconds", "ttft"),
    ("slo_tpot_ms", "tpot", "inference_tpot_p99_seconds", "tpot"),
    ("slo_p99_ms", "e2e", "inference_latency_p99_seconds", "e2e"),
)
FIGURES = ("ttft", "tpot", "e2e")
CARDS_METRIC = "workload_allocated_cards"
RATE_METRIC = "inference_request_rate_per_second"
TOKENS_METRIC = "inference_tokens_per_second"


@dataclass(frozen=True)
class Percentile:
    """One latency figure over a window (seconds), and what it is.

    ``exact``: a percentile of the window's requests from merged histograms. Not exact: the
    mean of ``values`` stored per-step P99s (an approximation, never a verdict).
    ``seconds`` is ``None`` when no request finished in the window (``requests`` 0) and no
    approximation exists either."""

    seconds: float | None
    requests: float
    exact: bool
    values: int = 0

    @property
    def no_requests(self) -> bool:
        return self.seconds is None


@dataclass(frozen=True)
class Verdict:
    """One service against one of its operator targets over the compared window."""

    cluster: str
    service: str
    target: str  # "ttft", "tpot" or "e2e"
    target_seconds: float
    measured: Percentile

    @property
    def measured_seconds(self) -> float | None:
        return self.measured.seconds

    @property
    def values(self) -> float:
        return self.measured.requests

    @property
    def met(self) -> bool | None:
        """``None`` (no verdict) without requests or on an approximation."""
        if self.measured.seconds is None or not self.measured.exact:
            return None
        return self.measured.seconds <= self.target_seconds


@dataclass
class ServiceSide:
    """One service on one cluster over the compared window: load, size and latency."""

    cluster: str
    service: str
    cards: float | None  # mean cards held
    requests: float  # finished requests in the window
    requests_per_second: float | None
    tokens_per_second: float | None
    latency: dict[str, dict[str, Percentile]]  # figure -> {"p50"/"p95"/"p99": Percentile}
    verdicts: dict[str, Verdict] = field(default_factory=dict)  # label key -> verdict

    @property
    def tokens_per_card(self) -> float | None:
        if self.tokens_per_second is None or not self.cards:
            return None
        return self.tokens_per_second / self.cards

    def p99(self, figure: str) -> Percentile:
        return self.latency[figure]["p99"]


@dataclass
class ClusterServing:
    """A cluster's services over the window and its pooled percentiles."""

    sides: dict[str, ServiceSide]  # by service name
    pooled: dict[str, dict[str, Percentile]]  # figure -> quantile -> Percentile (exact)
    requests: float

    @property
    def verdicts(self) -> list[Verdict]:
        return [v for side in self.sides.values() for v in side.verdicts.values()]


def _means(cluster: Cluster, metric: str, start: datetime, end: datetime) -> dict[int, float]:
    sums = entity_sums(
        cluster=cluster, metric_name=metric, kind=EntityKind.WORKLOAD, start=start, end=end
    )
    return {pk: total / n for pk, (total, n) in sums.items() if n}


def _percentiles(window, figure: str, approx: tuple[float, int] | None) -> dict[str, Percentile]:
    figures = getattr(window, figure) if window is not None else {}
    requests = window.requests if window is not None else 0.0
    out = {}
    for q in ("p50", "p95", "p99"):
        value = figures.get(q) if figures else None
        if value is not None:
            out[q] = Percentile(value, requests, exact=True)
        elif q == "p99" and approx is not None and approx[1]:
            out[q] = Percentile(approx[0] / approx[1], requests, exact=False, values=approx[1])
        else:
            out[q] = Percentile(None, requests, exact=True)
    return out


def cluster_serving(cluster: Cluster, start: datetime, end: datetime) -> ClusterServing:
    """Every inference service of ``cluster`` over ``[start, end]`` and the pooled figures."""
    services = list(
        Workload.objects.filter(cluster=cluster, kind=Workload.Kind.INFERENCE)
        .order_by("name")
        .values_list("pk", "name", *(f for f, _, _, _ in TARGETS))
    )
    found = serving_windows(
        cluster_id=cluster.pk, workload_ids=[row[0] for row in services], start=start, end=end
    )
    entity_of = dict(
        cluster.entities.filter(
            kind=EntityKind.WORKLOAD, workload_id__in=[row[0] for row in services]
        ).values_list("workload_id", "pk")
    )
    cards = _means(cluster, CARDS_METRIC, start, end)
    rate = _means(cluster, RATE_METRIC, start, end)
    tokens = _means(cluster, TOKENS_METRIC, start, end)
    steps = {
        metric: entity_sums(
            cluster=cluster, metric_name=metric, kind=EntityKind.WORKLOAD, start=start, end=end
        )
        for _, _, metric, _ in TARGETS
    }
    sides: dict[str, ServiceSide] = {}
    for pk, name, *targets in services:
        entity = entity_of.get(pk, -1)
        window = found.by_workload.get(pk)
        latency = {
            figure: _percentiles(window, figure, steps[metric].get(entity))
            for _, figure, metric, _ in TARGETS
        }
        span = (end - start).total_seconds()
        requests = window.requests if window is not None else 0.0
        side = ServiceSide(
            cluster=cluster.name,
            service=name,
            cards=cards.get(entity),
            requests=requests,
            requests_per_second=(requests / span if span > 0 and requests else rate.get(entity)),
            tokens_per_second=tokens.get(entity),
            latency=latency,
        )
        for (_, figure, _, key), target_ms in zip(TARGETS, targets, strict=True):
            if target_ms is not None:
                side.verdicts[key] = Verdict(
                    cluster=cluster.name,
                    service=name,
                    target=key,
                    target_seconds=target_ms / 1000.0,
                    measured=latency[figure]["p99"],
                )
        sides[name] = side
    pooled = {figure: _percentiles(found.pooled, figure, None) for figure in FIGURES}
    return ClusterServing(sides=sides, pooled=pooled, requests=found.pooled.requests)


@dataclass(frozen=True)
class ServicePair:
    """One service on the source and on the target, side by side (``None``: not there)."""

    service: str
    source: ServiceSide | None
    target: ServiceSide | None

    @property
    def targets(self) -> list[str]:
        keys = set()
        for side in (self.source, self.target):
            if side is not None:
                keys |= set(side.verdicts)
        return [key for _, _, _, key in TARGETS if key in keys]

    def verdict_pair(self, key: str) -> tuple[Verdict | None, Verdict | None]:
        return (
            self.source.verdicts.get(key) if self.source else None,
            self.target.verdicts.get(key) if self.target else None,
        )

    @property
    def rows(self) -> list[tuple[str, Verdict | None, Verdict | None]]:
        """``(target key, source verdict, target verdict)`` per target: the table's rows."""
        return [(key, *self.verdict_pair(key)) for key in self.targets]


def service_pairs(source: ClusterServing, target: ClusterServing) -> list[ServicePair]:
    """Every service of either side, matched by name, in name order."""
    names = sorted(set(source.sides) | set(target.sides))
    return [ServicePair(n, source.sides.get(n), target.sides.get(n)) for n in names]
