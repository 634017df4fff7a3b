"""The report's top line: migrate, do not, or not enough data — and the three figures it rests on.

1. **Service levels**: of the operator targets judged on *both* sides (same service, same
   window, percentiles of the window's requests), how many the target misses that the source
   meets (regressions), beside how many each side meets.
2. **Cost per unit of work**: the target's cost per 1M tokens served over the source's (each
   side's fully loaded inference cost ÷ its tokens, over the compared window).
3. **Money**: the saving per month of running the workload unified instead of split
   (``cost.selectors.compare_policies``) and its payback.

Rules, in order: no compared window, no target judged on both sides, or either money figure
missing → **not enough data** (saying which); any regression, a cost per 1M tokens higher
on the target, or no saving → **do not migrate** (saying which); otherwise **migrate**.
An approximate latency never decides (it has no verdict, so it is not "judged").
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.utils.translation import gettext as _

MIGRATE, DO_NOT, NOT_ENOUGH = "migrate", "do_not_migrate", "not_enough_data"


@dataclass(frozen=True)
class Recommendation:
    """The decision and its three figures (``None``: the figure could not be formed)."""

    outcome: str
    reasons: list[str] = field(default_factory=list)
    judged: int = 0  # targets judged on both sides
    source_met: int = 0
    target_met: int = 0
    regressions: int = 0  # met on the source, missed on the target
    cost_ratio: float | None = None  # target / source cost per 1M tokens
    source_cost_per_million: float | None = None
    target_cost_per_million: float | None = None
    saving_per_month: float | None = None
    payback_months: float | None = None
    currency: str = ""


def recommend(
    *,
    compared: bool,
    pairs: list,
    source_cost_per_million: float | None,
    target_cost_per_million: float | None,
    saving_per_month: float | None,
    payback_months: float | None = None,
    currency: str = "",
) -> Recommendation:
    """Decide from the side-by-side pairs (``report_services.ServicePair``) and the money."""
    judged = source_met = target_met = regressions = 0
    for pair in pairs:
        for _key, before, after in pair.rows:
            if before is None or after is None or before.met is None or after.met is None:
                continue
            judged += 1
            source_met += before.met
            target_met += after.met
            regressions += before.met and not after.met
    ratio = None
    if source_cost_per_million and target_cost_per_million is not None:
        ratio = target_cost_per_million / source_cost_per_million
    figures = dict(
        judged=judged,
        source_met=source_met,
        target_met=target_met,
        regressions=regressions,
        cost_ratio=ratio,
        source_cost_per_million=source_cost_per_million,
        target_cost_per_million=target_cost_per_million,
        saving_per_month=saving_per_month,
        payback_months=payback_months,
        currency=currency,
    )
    missing = []
    if not compared:
        missing.append(_("the two clusters have no data in a common span of the window"))
    if compared and not judged:
        missing.append(
            _("no service target could be judged on both sides (no requests or no histograms)")
        )
    if ratio is None:
        missing.append(_("the cost per 1M tokens is missing on one side"))
    if saving_per_month is None:
        missing.append(_("the saving per month could not be formed"))
    if missing:
        return Recommendation(NOT_ENOUGH, missing, **figures)
    against = []
    if regressions:
        against.append(
            _("%(n)d service targets met on the source are missed on the target")
            % {"n": regressions}
        )
    if ratio > 1:
        against.append(_("the target costs more per 1M tokens (%(r).2f×)") % {"r": ratio})
    if saving_per_month <= 0:
        against.append(_("running unified saves nothing per month"))
    if against:
        return Recommendation(DO_NOT, against, **figures)
    return Recommendation(MIGRATE, [], **figures)
