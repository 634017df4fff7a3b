"""The headline unified − split gain, defined once (issue 35 item 2).

Every place the comparison appears — ``compare``'s table and JSON, the what-if page, CSV and
API, the README — reads :func:`headline` of the same per-seed runs, so they cannot quote
different figures.

* **Goodput per card-hour** (the headline): useful work per card-hour of the whole cluster,
  in PFLOP of model work: training FLOPs that were kept (``6·N`` per token plus attention, as
  the MFU counts them, minus the work preemptions and failures threw away since the last
  checkpoint) plus ``2·N_active`` per prompt and output token of inference requests that met
  every SLO target (a request that missed its TTFT or TPOT target, or timed out, counts
  nothing). Both are the same unit, so the sum does not weigh one against the other by a
  price; inference is memory-bound, so it contributes little FLOP per card-hour next to
  training — a modelling choice, stated wherever the figure is shown. The gain is paired by
  seed (the same workload for both policies): ``unified / split − 1`` per seed, its mean and
  a Student-t 95 % interval over the seeds.
* **Busy utilization**: the share of card-time with a kernel running (training running or a
  replica with a request in flight), unified − split in points, paired the same way.
* **Allocated utilization**, shown beside them and labelled: the share of card-time some
  workload holds. It is *not* a gain: ``split`` counts as allocated every card its tenants'
  reserved inference replicas hold (up for their peak, idle or not) plus running training,
  while ``unified`` releases idle reservations to training, so it can fall while useful
  work rises.
"""

from __future__ import annotations

from .spread import stats

GOODPUT = "goodput_pflop_per_card_hour"
BUSY = "utilization_busy_mean"
ALLOCATED = "utilization_allocated_mean"
DEFINITION = (
    "goodput = (training model FLOPs kept, net of work lost to preemptions and failures, "
    "+ 2·N_active FLOPs per token of inference requests that met every SLO target) / "
    "(cluster cards × hours), in PFLOP per card-hour; gain = unified / split − 1 per seed "
    "(paired), mean and 95% interval over the seeds"
)
ALLOCATED_NOTE = (
    "allocated utilization is not a gain: split counts every card its reserved inference "
    "replicas hold (sized for the peak, idle or not) as allocated; unified lends idle "
    "reservations to training"
)


def _paired(runs: dict, key: str, relative: bool = False) -> dict | None:
    seeds = sorted(runs)
    try:
        a = [float(runs[s]["split"][key]) for s in seeds]
        b = [float(runs[s]["unified"][key]) for s in seeds]
    except (KeyError, TypeError):
        return None
    if relative:
        if any(x <= 0 for x in a):
            return None
        d = [y / x - 1.0 for x, y in zip(a, b, strict=True)]
    else:
        d = [y - x for x, y in zip(a, b, strict=True)]
    return {"split": stats(a), "unified": stats(b), "gain": stats(d)}


def headline(runs: dict[int, dict[str, dict]]) -> dict | None:
    """``{seed: {"split": summary, "unified": summary}}`` -> the headline figures.

    ``goodput`` (gain relative, per seed), ``busy`` and ``allocated`` (gain in points of the
    share, per seed): each holds ``split``, ``unified`` and ``gain`` as :func:`.spread.stats`
    (mean, min, max, sd, ``ci95_low``/``ci95_high`` — None with one seed — and ``n``).
    None when the runs lack either policy or the figures (an older summary).
    """
    if not runs or not all({"split", "unified"} <= set(r) for r in runs.values()):
        return None
    good = _paired(runs, GOODPUT, relative=True)
    busy = _paired(runs, BUSY)
    if good is None or busy is None:
        return None
    return {
        "seeds": sorted(runs),
        "goodput": {**good, "key": GOODPUT, "unit": "PFLOP per card-hour", "gain_unit": "ratio"},
        "busy": {**busy, "key": BUSY, "unit": "share", "gain_unit": "points"},
        "allocated": {
            **(_paired(runs, ALLOCATED) or {}),
            "key": ALLOCATED,
            "unit": "share",
            "gain_unit": "points",
            "note": ALLOCATED_NOTE,
        },
        "definition": DEFINITION,
    }


def _interval(st: dict, f) -> str:
    if st.get("ci95_low") is None:
        return "one seed: no interval"
    return f"95% CI [{f(st['ci95_low'])}, {f(st['ci95_high'])}]"


def describe(h: dict | None) -> list[str]:
    """The headline as text lines (``compare`` prints them above its table)."""
    if not h:
        return []
    n = len(h["seeds"])
    g, b, a = h["goodput"], h["busy"], h["allocated"]

    def pct(v: float) -> str:
        return f"{v:+.1%}"

    def pts(v: float) -> str:
        return f"{v * 100:+.1f} pts"

    lines = [
        f"Headline, unified vs split ({n} seed{'s' if n != 1 else ''}, paired by seed):",
        f"  goodput per card-hour  {g['split']['mean']:,.1f} -> {g['unified']['mean']:,.1f} "
        f"PFLOP/card-h: {pct(g['gain']['mean'])}, {_interval(g['gain'], pct)}",
        f"  busy utilization       {b['split']['mean']:.1%} -> {b['unified']['mean']:.1%}: "
        f"{pts(b['gain']['mean'])}, {_interval(b['gain'], pts)}",
    ]
    if "gain" in a:
        lines.append(
            f"  allocated utilization  {a['split']['mean']:.1%} -> {a['unified']['mean']:.1%}: "
            f"{pts(a['gain']['mean'])} ({a['note']})"
        )
    lines.append(f"  ({h['definition']})")
    return lines
