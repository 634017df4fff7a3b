"""One measurement of one criterion: read the window, check it can be judged, compare.

Called by :mod:`rollout.services.analysis` inside the step's transaction. What makes a
measurement **Inconclusive** rather than a verdict (never Successful):

- no trusted value in the window, fewer than ``min_samples``, an unbound workload, an idle
  workload (:mod:`rollout.services.baselines`);
- **stale data**: the newest trusted value is older than the freshness limit — two telemetry
  intervals (the larger of the portal's and the target cluster's scrape interval), never more
  than the criterion's window. A window that still holds values from a minute ago says nothing
  about now ("successful" 50 s after the last value arrived is what this prevents);
- a relative criterion without an expectation on the target's hardware: the baseline is
  missing, idle or not above 0, or the twin does not model this workload's figure on this pair
  of accelerators (:mod:`rollout.analysis.scaling`; the reason names the pair).

**Relative criteria measure the move.** The target's figure (only values after the step's
confirmed traffic, as every criterion) is compared with ``threshold × expected``, where
``expected = source figure × the twin's factor for the two accelerators`` — the source's
pre-move window (``baseline_window = pre_move``) or, Kayenta's canary vs baseline, the source's
remaining share of the same traffic over the **same** window (``same_window``; the source must
still carry traffic in it). The reason shows all of it: "15.41 on H100 → expected 8.2 on 910B;
measured 7.9".
"""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import partial

from django.conf import settings

from rollout.analysis import semantics as S
from rollout.analysis.evidence import evidence_of, evidence_parts, reason_joined
from rollout.analysis.scaling import ScalingQuestion, scaling_for
from rollout.labels import reason_data
from rollout.models import BaselineWindow, MetricResult, MigrationPlan
from rollout.services.baselines import ACTIVITY_METRICS, baseline_capture, idle, unbound
from telemetry.read import WindowAggregate, window_aggregate

# Serving figures from histograms: their freshness is whether the request counters moved.
SERVING_FRESHNESS_METRIC = "serving_requests_per_second"
SERVING_METRICS = {
    "serving_ttft_seconds",
    "serving_tpot_seconds",
    "serving_error_ratio",
    "serving_requests_per_second",
}


def _aggregate(*, aggregation: str, start: datetime, end: datetime, **where) -> WindowAggregate:
    """The window's aggregate over trusted values only (``where`` carries ``trusted``)."""
    if aggregation != "rate":
        return window_aggregate(aggregation=aggregation, start=start, end=end, **where)
    # A counter's increase per second: (max − min) over the window (counters only grow).
    high = window_aggregate(aggregation="max", start=start, end=end, **where)
    if high.value is None:
        return high
    low = window_aggregate(aggregation="min", start=start, end=end, **where)
    span = max((end - start).total_seconds(), 1.0)
    return WindowAggregate(
        (high.value - low.value) / span, high.samples, sources=high.sources, ignored=high.ignored
    )


def trusted_reader(spec: dict, plan: MigrationPlan):
    """``_aggregate`` reading only the sources the criterion trusts (runs started before
    criteria named sources have none in their spec: the default), and of those only the ones
    someone other than the plan's requester created or approved (four eyes on evidence)."""
    return partial(
        _aggregate, trusted=spec.get("trusted_sources") or [], requester_id=plan.created_by_id
    )


def freshness_limit(spec: dict, plan: MigrationPlan) -> int:
    """Seconds the newest trusted value may be old: two telemetry intervals, within the window."""
    interval = max(
        settings.TELEMETRY_INTERVAL_SECONDS, plan.target_cluster.scrape_interval_seconds or 0
    )
    return max(1, min(spec["window_seconds"], 2 * interval))


def stale(aggregate, spec: dict, plan: MigrationPlan, *, start, end, label: str):
    """A problem when no trusted value of the criterion arrived within the freshness limit."""
    limit = freshness_limit(spec, plan)
    recent = max(start, end - timedelta(seconds=limit))
    serving = spec["metric"] in SERVING_METRICS
    found = aggregate(
        metric=SERVING_FRESHNESS_METRIC if serving else spec["metric"],
        aggregation="mean" if serving else "max",
        cluster_id=plan.target_cluster_id,
        entity_kind=spec["entity_kind"],
        entity_key=spec["entity_key"],
        start=recent,
        end=end,
    )
    if found.value is not None and found.samples > 0:
        return None
    return (
        f"stale: no value of {label} in the last {limit} s (the newest is older than two "
        f"telemetry intervals): no verdict on old data",
        reason_data("stale", label=label, seconds=limit),
    )


def _hardware(cluster) -> tuple[str | None, str]:
    model = cluster.hardware_model
    return (model.slug, model.name) if model is not None else (None, cluster.name)


def expectation(spec: dict, plan: MigrationPlan, *, window: tuple, baseline_window: tuple):
    """The twin's factor for this workload's figure from the source's accelerator to the
    target's, or the problem saying the pair is not modelled."""
    source_hw, source_name = _hardware(plan.source_cluster)
    target_hw, target_name = _hardware(plan.target_cluster)
    workload = spec["entity_kind"] == "workload"
    question = ScalingQuestion(
        metric=spec["metric"],
        workload_kind=spec.get("workload_kind"),
        workload=(spec.get("baseline_key") or spec["entity_key"]) if workload else None,
        target_workload=spec["entity_key"] if workload else None,
        source_cluster_id=plan.source_cluster_id,
        target_cluster_id=plan.target_cluster_id,
        source_hardware=source_hw,
        target_hardware=target_hw,
        source_name=source_name,
        target_name=target_name,
        source_window=baseline_window,
        target_window=window,
    )
    found = scaling_for(question)
    if found is not None:
        return found, None
    label = f"{spec['aggregation']}({spec['metric']})"
    what = source_hw or "an unrecorded accelerator", target_hw or "an unrecorded accelerator"
    return None, (
        f"the twin does not model {label} of {spec['entity_key']} from {what[0]} to {what[1]}: "
        "no expected figure on the target, no verdict",
        reason_data(
            "no_hardware_model", label=label, workload=spec["entity_key"], pair=" → ".join(what)
        ),
    )


def _same_window_baseline(aggregate, spec: dict, plan: MigrationPlan, *, start, end, label):
    """Kayenta's live baseline: the source's figure over the canary's own window."""
    key = spec.get("baseline_key") or spec["entity_key"]
    where = {"cluster_id": plan.source_cluster_id, "entity_kind": spec["entity_kind"]}
    found = aggregate(
        metric=spec["metric"],
        aggregation=spec["aggregation"],
        entity_key=key,
        start=start,
        end=end,
        **where,
    )
    problem = (
        f"the baseline (the source's share) has no {label} in the same window",
        reason_data("no_baseline", label=label),
    )
    if found.value is None or found.value <= 0:
        return None, problem
    activity = ACTIVITY_METRICS.get(spec.get("workload_kind") or "")
    if activity and spec["entity_kind"] == "workload":
        busy = aggregate(
            metric=activity, aggregation="max", entity_key=key, start=start, end=end, **where
        )
        if busy.value is not None and busy.value <= 0:
            return None, problem
    return found.value, None


def _inconclusive(value, samples, problem, evidence, baseline=None, threshold=None) -> tuple:
    return S.INCONCLUSIVE, value, baseline, threshold, samples, problem, evidence


def evaluate(
    spec: dict, plan: MigrationPlan, start: datetime, end: datetime, *, metric: MetricResult
) -> tuple:
    """``(outcome, value, baseline, threshold, samples, (reason, data), evidence)``."""
    problem = unbound(spec)
    if problem is not None:
        return _inconclusive(None, 0, problem, {})
    aggregate = trusted_reader(spec, plan)
    where = {
        "metric": spec["metric"],
        "entity_kind": spec["entity_kind"],
        "entity_key": spec["entity_key"],
        "aggregation": spec["aggregation"],
        "start": start,
        "end": end,
    }
    result = aggregate(cluster_id=plan.target_cluster_id, **where)
    evidence = evidence_of(result)
    extra, extra_parts = evidence_parts(evidence)
    label = f"{spec['aggregation']}({spec['metric']})"
    if result.value is None:
        reason = (
            f"no data in the window for {label}{extra}",
            reason_joined(reason_data("no_data", label=label), extra_parts),
        )
        return _inconclusive(None, 0, reason, evidence)
    needed = spec.get("min_samples") or 1
    if result.samples < needed:
        reason = (
            f"too few values in the step for {label}: {result.samples} of {needed}{extra}",
            reason_joined(
                reason_data("too_few", label=label, samples=result.samples, needed=needed),
                extra_parts,
            ),
        )
        return _inconclusive(result.value, result.samples, reason, evidence)
    problem = idle(
        aggregate, spec, cluster_id=plan.target_cluster_id, start=start, end=end, label=label
    )
    if problem is None:
        problem = stale(aggregate, spec, plan, start=start, end=end, label=label)
    if problem is not None:
        return _inconclusive(result.value, result.samples, problem, evidence)
    factor = float(spec["threshold"])
    threshold, baseline, scaling, live = factor, None, None, False
    if spec["compare_to_baseline"]:
        live = spec.get("baseline_window") == BaselineWindow.SAME_WINDOW
        if live:
            baseline, problem = _same_window_baseline(
                aggregate, spec, plan, start=start, end=end, label=label
            )
            baseline_window = (start, end)
        else:
            if metric.baseline_value is None:
                problem = baseline_capture(aggregate, metric, plan, now=end).problem
            baseline = metric.baseline_value
            baseline_window = (metric.baseline_start, metric.baseline_end)
        if problem is None:
            scaling, problem = expectation(
                spec, plan, window=(start, end), baseline_window=baseline_window
            )
        if problem is not None:
            return _inconclusive(result.value, result.samples, problem, evidence, baseline)
        metric.expected_scale, metric.expected_note = scaling.factor, scaling.note
        threshold = factor * baseline * scaling.factor
    symbol = {"lt": "<", "le": "≤", "gt": ">", "ge": "≥"}[spec["comparator"]]
    holds = S.compare(result.value, spec["comparator"], threshold)
    verdict = "holds" if holds else "does not hold"
    reason = f"{label} = {result.value:.4g} {symbol} {threshold:.4g} {verdict}"
    compared = {"label": label, "symbol": symbol}
    compared.update(value=f"{result.value:.4g}", threshold=f"{threshold:.4g}")
    parts = [reason_data("holds" if holds else "does_not_hold", **compared)]
    if scaling is not None:
        expected = baseline * scaling.factor
        when = "in the same window" if live else "before the move"
        reason += (
            f" ({factor:g} × expected {expected:.4g} on {scaling.target}: source "
            f"{baseline:.4g} on {scaling.source} {when} × {scaling.factor:.4g}, {scaling.note};"
            f" measured {result.value:.4g})"
        )
        parts.append(
            reason_data(
                "expected_on_target",
                factor=f"{factor:g}",
                baseline=f"{baseline:.4g}",
                source=scaling.source,
                expected=f"{expected:.4g}",
                target=scaling.target,
                measured=f"{result.value:.4g}",
                scale=f"{scaling.factor:.4g}",
                when="same_window" if live else "pre_move",
            )
        )
    reason += f"; {result.samples} values" + extra
    # Shown as "<comparison> <expectation>; <n values>; <sources>" in the reader's language.
    data = {
        "parts": [{"parts": parts}, reason_data("values", samples=result.samples), *extra_parts]
    }
    data["joiner"] = "; "
    outcome = S.SUCCESSFUL if holds else S.FAILED
    return outcome, result.value, baseline, threshold, result.samples, (reason, data), evidence
