"""Reads for the twin control page."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from simulation.labels import ablation_label
from simulation.models import TwinGap, TwinRun
from simulation.services.lag import tick_lag_seconds


@dataclass(frozen=True)
class RunStatus:
    run: TwinRun
    cards: int
    scheduler_lag_s: float | None  # None while paused: a paused run is not late
    pool_age_s: float | None
    simulated_hours_per_wall_hour: float
    sim_clock: str
    # Intervals without data in the last day (outages), newest first.
    recent_gaps: tuple[TwinGap, ...] = ()


def _age(moment: datetime | None, now: datetime) -> float | None:
    return None if moment is None else max(0.0, (now - moment).total_seconds())


GAP_WINDOW = timedelta(days=1)


def run_statuses() -> list[RunStatus]:
    now = timezone.now()
    gaps: dict[int, list[TwinGap]] = {}
    for gap in TwinGap.objects.filter(ended_at__gte=now - GAP_WINDOW).order_by("-ended_at"):
        gaps.setdefault(gap.run_id, []).append(gap)
    result = []
    for run in TwinRun.objects.select_related("cluster").order_by("name"):
        step_seconds = float(run.scenario.get("step_seconds", 60.0))
        speed = run.steps_per_tick * step_seconds / settings.TWIN_TICK_SECONDS
        days, rest = divmod(int(run.sim_time), 86400)
        result.append(
            RunStatus(
                run=run,
                cards=int(run.scenario.get("topology", {}).get("cards", 0)),
                scheduler_lag_s=(
                    tick_lag_seconds(run, now.timestamp())
                    if run.status == TwinRun.Status.RUNNING
                    else None
                ),
                pool_age_s=_age(run.last_pool_tick_at, now),
                simulated_hours_per_wall_hour=speed,
                sim_clock=f"d{days} {rest // 3600:02d}:{rest % 3600 // 60:02d}",
                recent_gaps=tuple(gaps.get(run.pk, ())),
            )
        )
    return result


# Figures of the ablation the validation report shows ("which mechanism contributed what").
ABLATION_REPORT_KEYS = (
    "utilization_allocated_mean",
    "training_pflops_mean",
    "training_goodput_pflops",
    "ttft_p99_ms",
    "tpot_p99_ms",
    "slo_attainment",
)


def latest_whatif_ablation(*, cards: int | None = None, hardware: str | None = None) -> dict | None:
    """The newest finished what-if ablation on ``cards`` × ``hardware`` (any, if not given),
    each row with its change from the one before and its spread over every such run.

    Runs of the same cards and accelerator that differ only in seed (or trace) are repeats of
    one comparison: each figure's ``low``/``high`` is its range over them and ``seeds`` lists
    them, so a reader sees whether one run's difference is larger than the runs' spread.
    Registered with :mod:`dashboards.report_sources` (dashboards cannot import this app).
    """
    from simulation.models import WhatIfRun

    runs = WhatIfRun.objects.filter(status=WhatIfRun.Status.DONE, result__has_key="ablation")
    if cards is not None:
        runs = runs.filter(cards=cards)
    if hardware is not None:
        runs = runs.filter(hardware=hardware)
    runs = list(runs.order_by("-finished_at", "-pk"))
    if not runs:
        return None
    run = runs[0]
    # Repeats: the same comparison (cards, accelerator, simulated hours) on other seeds.
    repeats = [r for r in runs if r.hours == run.hours and r.hardware == run.hardware]
    by_name = [{row["name"]: row for row in r.result["ablation"]} for r in repeats]
    rows, previous = [], None
    for row in run.result["ablation"]:
        figures = {}
        for key in ABLATION_REPORT_KEYS:
            value = row.get(key)
            before = previous.get(key) if previous else None
            delta = None if value is None or before is None else value - before
            seen = [
                other[row["name"]][key]
                for other in by_name
                if row["name"] in other and other[row["name"]].get(key) is not None
            ]
            # A run's own further seeds (issue 25): the split and unified rows' spread.
            for r in repeats:
                st = ((r.result.get("spread") or {}).get(row["name"]) or {}).get(key)
                if st and st.get("n", 1) > 1:
                    seen += [st["min"], st["max"]]
            figures[key] = {
                "value": value,
                "delta": delta,
                "low": min(seen) if len(seen) > 1 else None,
                "high": max(seen) if len(seen) > 1 else None,
            }
        rows.append({"name": row["name"], "label": ablation_label(row["name"]), "figures": figures})
        previous = row
    return {
        "run": run.pk,
        "cards": run.cards,
        "hardware": run.hardware,
        "hours": run.hours,
        "trace": run.trace_name,
        "seed": run.seed,
        "runs": [r.pk for r in repeats],
        "seeds": sorted({x for r in repeats for x in r.result.get("seeds") or [r.seed]}),
        "rows": rows,
        # The run's headline gain as engine.headline defines it (None for older runs).
        "headline": run.result.get("headline"),
    }
