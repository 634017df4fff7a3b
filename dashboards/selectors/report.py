"""The validation report's figures: baseline (split/legacy) vs unified over one window.

Each figure is computed from stored telemetry only and carries its source — cluster, metric,
window, number of stored values — or ``None`` when the cluster has no data in the window,
which the report says instead of showing a number. Latency percentiles are percentiles of
the window's requests (:mod:`.report_services`); per-card figures divide by the cards the
work held (inference tokens by inference cards, training samples by training cards), and
each side states its size and load so a reader sees whether the two are comparable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.utils import timezone

from cost.selectors import ClusterCost, Comparison, cluster_cost, compare_policies
from dashboards.report_sources import latest_ablation
from dashboards.selectors.report_decision import (
    Coverage,
    ReportRefused,
    common_window,
    coverage,
    overlap_seconds,
    retention_refusal,
)
from dashboards.selectors.report_recommend import Recommendation, recommend
from dashboards.selectors.report_services import (
    ClusterServing,
    Percentile,
    ServicePair,
    Verdict,
    cluster_serving,
    service_pairs,
)
from inventory.models import Cluster
from rollout.selectors import overrides_between
from telemetry.read import Series, WindowStat, cluster_series, stat_of_series

P99_METRIC = "inference_latency_p99_seconds"  # end-to-end: the secondary latency figure
TTFT_METRIC = "inference_ttft_p99_seconds"
TPOT_METRIC = "inference_tpot_p99_seconds"
RATE_METRIC = "inference_request_rate_per_second"
CURVE_METRICS = ("cluster_utilization_allocated_ratio", "cluster_utilization_busy_ratio")
HBM_METRIC = "cluster_hbm_live_ratio"
SAMPLES_METRIC = "cluster_training_samples_per_second"
INFERENCE_CARDS = "cluster_inference_cards_allocated"
TRAINING_CARDS = "cluster_training_cards_allocated"


@dataclass
class ClusterFigures:
    """One side of the report over the compared window: size, load, work, latency, cost."""

    cluster: Cluster
    samples: WindowStat | None
    serving: ClusterServing
    curves: dict[str, Series | None]
    curve_stats: dict[str, WindowStat | None]
    hbm_series: Series | None
    hbm: WindowStat | None
    cost: ClusterCost
    inference_cards: WindowStat | None = None  # mean cards held by inference services
    training_cards: WindowStat | None = None

    @property
    def cards(self) -> int:
        return self.cost.cards

    # The headline latencies: the P99 of every request of every service (merged histograms).
    @property
    def ttft(self) -> Percentile:
        return self.serving.pooled["ttft"]["p99"]

    @property
    def tpot(self) -> Percentile:
        return self.serving.pooled["tpot"]["p99"]

    @property
    def p99(self) -> Percentile:
        return self.serving.pooled["e2e"]["p99"]

    @property
    def samples_per_card(self) -> float | None:
        """Training samples/s per card held by training (the work's own cards; the cluster's
        card count when the split of cards is not reported)."""
        if self.samples is None:
            return None
        cards = self.training_cards.mean if self.training_cards else self.cards
        return self.samples.mean / cards if cards else None

    @property
    def tokens_per_card(self) -> float | None:
        """Tokens/s per card held by inference services (not per card of the cluster: the
        training cards serve no tokens)."""
        if self.cost.tokens is None:
            return None
        cards = self.inference_cards.mean if self.inference_cards else self.cards
        return self.cost.tokens.mean / cards if cards else None


def cluster_figures(
    cluster: Cluster, start: datetime, end: datetime, *, now: datetime | None = None
) -> ClusterFigures:
    curves = {m: cluster_series(cluster, m, start, end) for m in CURVE_METRICS}
    hbm_series = cluster_series(cluster, HBM_METRIC, start, end)

    def stat(metric: str) -> WindowStat | None:
        return stat_of_series(cluster_series(cluster, metric, start, end), start, end)

    return ClusterFigures(
        cluster=cluster,
        samples=stat(SAMPLES_METRIC),
        serving=cluster_serving(cluster, start, end),
        curves=curves,
        curve_stats={m: stat_of_series(s, start, end) for m, s in curves.items()},
        hbm_series=hbm_series,
        hbm=stat_of_series(hbm_series, start, end),
        cost=cluster_cost(cluster, start, end, now=now),
        inference_cards=stat(INFERENCE_CARDS),
        training_cards=stat(TRAINING_CARDS),
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
    pairs: list[ServicePair]  # each service, source and target side by side
    recommendation: Recommendation

    @property
    def window_seconds(self) -> float:
        return (self.end - self.start).total_seconds()

    # The one coverage statement: seconds of ``compared`` both sides' data cover (never
    # more than the data covers, gaps excluded); 0 when nothing is compared.
    compared_seconds: float = 0.0
    # Gates of source → target plans promoted past an analysis that did not pass
    # (``rollout.selectors.overrides_between``): the moves behind these figures, said.
    overrides: list[dict] = field(default_factory=list)

    @property
    def verdicts_met(self) -> int:
        return sum(1 for v in self.verdicts if v.met)

    @property
    def verdicts_judged(self) -> int:
        return sum(1 for v in self.verdicts if v.met is not None)


def _compared_seconds(
    baseline: Cluster, unified: Cluster, compared: tuple[datetime, datetime] | None
) -> float:
    """The time both sides' data cover in the compared window, read over that window alone
    (its finest tier: a long asked window's coarse buckets would count a partly filled
    bucket as a gap, or a gap as data)."""
    if compared is None:
        return 0.0
    lo, hi = compared
    return overlap_seconds(coverage(baseline, lo, hi), coverage(unified, lo, hi), lo=lo, hi=hi)


def report_decision(
    baseline: Cluster,
    unified: Cluster,
    start: datetime,
    end: datetime,
    *,
    now: datetime | None = None,
) -> Decision:
    """Both sides over the span where both have data (the asked window when they never
    overlap: then nothing is compared and the page says so).

    Raises :class:`ReportRefused` for a window the retained data cannot cover: one starting
    before the kept serving counters, or one whose hours the cost ledger cannot bill (its
    own refusal, :mod:`cost.hours`)."""
    now = now or timezone.now()
    refused = retention_refusal(start, now=now)
    if refused:
        raise ReportRefused(refused)
    sides = {"baseline": coverage(baseline, start, end), "unified": coverage(unified, start, end)}
    compared = common_window(*sides.values(), start=start, end=end)
    lo, hi = compared or (start, end)
    base = cluster_figures(baseline, lo, hi, now=now)
    uni = cluster_figures(unified, lo, hi, now=now)
    for side in (base, uni):
        if side.cost.refusal:
            raise ReportRefused(f"{side.cluster.name}: {side.cost.refusal}")
    hardware = unified.hardware_model.slug if unified.hardware_model_id else None
    pairs = service_pairs(base.serving, uni.serving) if compared else []
    comparison = compare_policies(uni.cost, base.cost)
    tco = comparison.tco if compared else None
    return Decision(
        start=start,
        end=end,
        coverage=sides,
        compared=compared,
        base=base,
        uni=uni,
        verdicts=base.serving.verdicts + uni.serving.verdicts if compared else [],
        comparison=comparison,
        ablation=latest_ablation(cards=uni.cards, hardware=hardware),
        pairs=pairs,
        compared_seconds=_compared_seconds(baseline, unified, compared),
        overrides=overrides_between(source_id=baseline.pk, target_id=unified.pk),
        recommendation=recommend(
            compared=compared is not None,
            pairs=pairs,
            source_cost_per_million=base.cost.cost_per_million_tokens,
            target_cost_per_million=uni.cost.cost_per_million_tokens,
            saving_per_month=tco.saving_per_month if tco else None,
            payback_months=comparison.payback_months if tco else None,
            currency=uni.cost.inputs.currency,
        ),
    )
