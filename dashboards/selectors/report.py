"""The validation report's figures: baseline (split/legacy) vs unified over one window.

Each figure is computed from stored telemetry only and carries its source — cluster, metric,
window, number of stored values — or ``None`` when the cluster has no data in the window,
which the report says instead of showing a number.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from cost.selectors import ClusterCost, Comparison, cluster_cost, compare_policies
from dashboards.report_sources import latest_ablation
from dashboards.selectors.report_decision import (
    Coverage,
    Verdict,
    common_window,
    coverage,
    slo_verdicts,
)
from inventory.models import Cluster
from telemetry.models import EntityKind
from telemetry.read import Series, WindowStat, cluster_series, entity_sums, stat_of_series

P99_METRIC = "inference_latency_p99_seconds"  # end-to-end: the secondary latency figure
TTFT_METRIC = "inference_ttft_p99_seconds"
TPOT_METRIC = "inference_tpot_p99_seconds"
RATE_METRIC = "inference_request_rate_per_second"
CURVE_METRICS = ("cluster_utilization_allocated_ratio", "cluster_utilization_busy_ratio")
HBM_METRIC = "cluster_hbm_live_ratio"
SAMPLES_METRIC = "cluster_training_samples_per_second"


@dataclass(frozen=True)
class P99Figure:
    """Request-weighted mean of the services' mean P99 (seconds) over the window.

    A percentile of the pooled requests would need every request; weighting each service's
    mean P99 by its mean request rate is the stated approximation.
    """

    value_seconds: float
    services: int
    values: int  # stored P99 values averaged
    rows: list[tuple[str, float, float, int]]  # (workload, mean P99 s, mean rate/s, values)


@dataclass
class ClusterFigures:
    cluster: Cluster
    samples: WindowStat | None
    p99: P99Figure | None  # end-to-end
    ttft: P99Figure | None
    tpot: P99Figure | None
    curves: dict[str, Series | None]
    curve_stats: dict[str, WindowStat | None]
    hbm_series: Series | None
    hbm: WindowStat | None
    cost: ClusterCost

    @property
    def cards(self) -> int:
        return self.cost.cards

    @property
    def samples_per_card(self) -> float | None:
        """Training samples/s per card: the like-for-like figure across cluster sizes."""
        if self.samples is None or not self.cards:
            return None
        return self.samples.mean / self.cards

    @property
    def tokens_per_card(self) -> float | None:
        if self.cost.tokens is None or not self.cards:
            return None
        return self.cost.tokens.mean / self.cards


def inference_p99(
    cluster: Cluster, start: datetime, end: datetime, metric: str = P99_METRIC
) -> P99Figure | None:
    """Request-weighted mean of the services' mean ``metric`` (a per-service P99)."""
    kind = EntityKind.WORKLOAD
    p99 = entity_sums(cluster=cluster, metric_name=metric, kind=kind, start=start, end=end)
    if not p99:
        return None
    rate = entity_sums(cluster=cluster, metric_name=RATE_METRIC, kind=kind, start=start, end=end)
    names = dict(cluster.entities.filter(pk__in=list(p99)).values_list("pk", "key"))
    rows = []
    for entity_id, (total, count) in p99.items():
        r_total, r_count = rate.get(entity_id, (0.0, 0))
        rows.append((names[entity_id], total / count, r_total / r_count if r_count else 0.0, count))
    rows.sort()
    weight = sum(r[2] for r in rows)
    if weight > 0:
        value = sum(r[1] * r[2] for r in rows) / weight
    else:  # no request-rate data: an unweighted mean, still from stored values only
        value = sum(r[1] for r in rows) / len(rows)
    return P99Figure(value, len(rows), sum(r[3] for r in rows), rows)


def cluster_figures(cluster: Cluster, start: datetime, end: datetime) -> ClusterFigures:
    curves = {m: cluster_series(cluster, m, start, end) for m in CURVE_METRICS}
    hbm_series = cluster_series(cluster, HBM_METRIC, start, end)
    return ClusterFigures(
        cluster=cluster,
        samples=stat_of_series(cluster_series(cluster, SAMPLES_METRIC, start, end), start, end),
        p99=inference_p99(cluster, start, end),
        ttft=inference_p99(cluster, start, end, TTFT_METRIC),
        tpot=inference_p99(cluster, start, end, TPOT_METRIC),
        curves=curves,
        curve_stats={m: stat_of_series(s, start, end) for m, s in curves.items()},
        hbm_series=hbm_series,
        hbm=stat_of_series(hbm_series, start, end),
        cost=cluster_cost(cluster, start, end),
    )


def ratio(unified: float | None, baseline: float | None) -> float | None:
    """unified / baseline, or ``None`` when either is missing or the baseline is zero."""
    if unified is None or baseline is None or baseline == 0:
        return None
    return unified / baseline


@dataclass
class Decision:
    """Everything the report decides on: both sides over one window, with coverage, SLO
    verdicts, money and the ablation of the same clusters (see ``report_decision``)."""

    start: datetime  # the window asked for
    end: datetime
    coverage: dict[str, Coverage]  # "baseline" / "unified" over the asked window
    compared: tuple[datetime, datetime] | None  # where both have data (None: nowhere)
    base: ClusterFigures
    uni: ClusterFigures
    verdicts: list[Verdict]
    comparison: Comparison
    ablation: dict | None

    @property
    def compared_seconds(self) -> float:
        if self.compared is None:
            return 0.0
        return (self.compared[1] - self.compared[0]).total_seconds()

    @property
    def verdicts_met(self) -> int:
        return sum(1 for v in self.verdicts if v.met)

    @property
    def verdicts_judged(self) -> int:
        return sum(1 for v in self.verdicts if v.met is not None)


def report_decision(
    baseline: Cluster, unified: Cluster, start: datetime, end: datetime
) -> Decision:
    """Both sides over the span where both have data (the asked window when they never
    overlap: then nothing is compared and the page says so)."""
    sides = {"baseline": coverage(baseline, start, end), "unified": coverage(unified, start, end)}
    compared = common_window(*sides.values(), start=start, end=end)
    lo, hi = compared or (start, end)
    base = cluster_figures(baseline, lo, hi)
    uni = cluster_figures(unified, lo, hi)
    hardware = unified.hardware_model.slug if unified.hardware_model_id else None
    return Decision(
        start=start,
        end=end,
        coverage=sides,
        compared=compared,
        base=base,
        uni=uni,
        verdicts=slo_verdicts(baseline, lo, hi) + slo_verdicts(unified, lo, hi) if compared else [],
        comparison=compare_policies(uni.cost, base.cost),
        ablation=latest_ablation(cards=uni.cards, hardware=hardware),
    )
