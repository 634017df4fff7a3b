"""Cost and utilization page (operators: every cluster, both ledgers, the inputs form;
customers: their tenant's showback only), its CSV exports, and the inputs form post."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from cluster_portal.web.csv import csv_writer
from cluster_portal.web.units import duration
from cost import charts
from cost.allocation import hour_start
from cost.forms import CostAssumptionsForm
from cost.hours import WindowNotCovered
from cost.idle_split import idle_holders
from cost.models import CostAssumptions
from cost.selectors import (
    ClusterCost,
    Comparison,
    ShowbackRow,
    clusters_cost,
    compare_policies,
    customer_ledger,
    default_pair,
    refuse_uncovered,
    tenant_ledgers,
    tenant_showback,
)
from cost.services import cost_assumptions_save

WINDOWS = (
    (1, gettext_lazy("1 hour")),
    (6, gettext_lazy("6 hours")),
    (24, gettext_lazy("24 hours")),
    (168, gettext_lazy("7 days")),
    (720, gettext_lazy("30 days")),
)
DEFAULT_HOURS = 24


def window(request: HttpRequest) -> tuple[int, datetime, datetime]:
    """``?hours=`` from the offered choices (anything else: the 24 h default), ending now."""
    try:
        hours = int(request.GET.get("hours", DEFAULT_HOURS))
    except ValueError:
        hours = DEFAULT_HOURS
    if hours not in dict(WINDOWS):
        hours = DEFAULT_HOURS
    end = datetime.now(tz=UTC)
    return hours, end - timedelta(hours=hours), end


def coverage_notes(rows: list[ShowbackRow]) -> list[str]:
    """One sentence per cluster saying how much of the window was billed, and why."""
    notes = []
    for cluster, covered, window_hours in sorted(
        {(r.cluster, r.covered_hours, r.window_hours) for r in rows}
    ):
        if covered <= 0:
            notes.append(
                _("%(cluster)s: no telemetry in this window, so nothing is billed for it.")
                % {"cluster": cluster}
            )
        else:
            notes.append(
                _("%(cluster)s: billed for %(covered)s of data in the %(window)s window.")
                % {
                    "cluster": cluster,
                    "covered": duration(covered * 3600),
                    "window": duration(window_hours * 3600),
                }
            )
    return notes


def _pick(costs: list[ClusterCost], request: HttpRequest) -> Comparison | None:
    unified, baseline = default_pair(costs)
    by_id = {str(c.cluster.pk): c for c in costs}
    unified = by_id.get(request.GET.get("unified", ""), unified)
    baseline = by_id.get(request.GET.get("baseline", ""), baseline)
    if unified is None or baseline is None or unified is baseline:
        return None
    return compare_policies(unified, baseline)


@login_required
def cost_page(request: HttpRequest) -> HttpResponse:
    """GET: the page or ``?format=csv&table=...``; POST (operators): save the cost inputs.

    A window the ledger cannot cover (closed hours never persisted, minute data pruned) is
    refused with a 400 saying which hours and why, never billed from what is left."""
    hours, start, end = window(request)
    try:
        return _cost_page(request, hours, start, end)
    except WindowNotCovered as refused:
        context = {"refusal": str(refused), "hours": hours, "windows": WINDOWS}
        context.update(start=start, end=end)
        return render(request, "cost/cost_refused.html", context, status=400)


def _cost_page(request: HttpRequest, hours: int, start: datetime, end: datetime) -> HttpResponse:
    user = request.user
    form = None
    if request.method == "POST":
        if not user.has_perm("monitoring.operate_cluster"):
            raise PermissionDenied
        form = CostAssumptionsForm.bound(request.POST)
        if form.is_valid():
            cost_assumptions_save(cluster=form.cleaned_data["cluster"], values=form.input_values())
            messages.success(request, _("Cost inputs saved."))
            return redirect(request.get_full_path())
    if not user.sees_all_tenants:
        rows = tenant_showback(user.tenant_id, start, end) if user.tenant_id else []
        if request.GET.get("format") == "csv":
            return showback_csv(rows)
        context = {"rows": rows, "hours": hours, "windows": WINDOWS, "start": start, "end": end}
        # The customer ledger: this tenant's workloads only, never the internal ledger.
        context["ledger"] = (
            customer_ledger(user.tenant.slug, start, end) if user.tenant_id else None
        )
        context["total"] = round(sum(r.cost_window for r in rows), 2)
        context["currency"] = rows[0].currency if rows else ""
        context["coverage"] = coverage_notes(rows)
        return render(request, "cost/cost_customer.html", context)
    costs = refuse_uncovered(clusters_cost(start, end))
    comparison = _pick(costs, request)
    table = request.GET.get("table")
    if request.GET.get("format") == "csv":
        if table == "comparison":
            return comparison_csv(comparison)
        if table == "ledger":
            return ledger_csv(costs)
        return clusters_csv(costs)
    can_edit = user.has_perm("monitoring.operate_cluster")
    if form is None and can_edit:
        form = CostAssumptionsForm(instance=CostAssumptions.objects.filter(cluster=None).first())
    context = {
        "costs": costs,
        "comparison": comparison,
        "hours": hours,
        "windows": WINDOWS,
        "start": start,
        "end": end,
        "form": form,
        "can_edit": can_edit,
        "overrides": CostAssumptions.objects.select_related("cluster"),
        "cost_figure": _cost_figure(costs),
        "tenant_ledgers": tenant_ledgers(comparison) if comparison else [],
        "tco_figure": _tco_figure(comparison),
        "idle_figure": _idle_figure(costs),
        "idle_holders": idle_holders(costs),
        "idle_rule_percent": settings.SCHEDULER_IDLE_UTILIZATION_PERCENT,
    }
    return render(request, "cost/cost.html", context, status=400 if form and form.errors else 200)


def _cost_figure(costs: list[ClusterCost]) -> dict:
    priced = [c for c in costs if c.asset is not None]
    return charts.stacked_bars(
        _("Asset cost per hour by component"),
        [c.cluster.name for c in priced],
        {
            _("capex (amortised)"): [c.asset.capex_per_hour for c in priced],
            _("energy"): [c.asset.energy.cost_per_hour for c in priced],
            _("operations"): [c.asset.operations_per_hour for c in priced],
        },
        _with_currency(_("cost per hour"), [c.inputs.currency for c in priced]),
        money=True,
    )


def _with_currency(label: str, currencies: list[str]) -> str:
    """An axis title that names the currency (or currencies) its amounts are in."""
    named = sorted({code for code in currencies if code})
    return f"{label} ({', '.join(named)})" if named else label


def _idle_figure(costs: list[ClusterCost]) -> dict | None:
    """Idle cost by hour, one line per cluster (each in its own currency's units)."""
    series = {}
    for c in costs:
        if c.ledger is not None and c.ledger.hours:
            series[f"{c.cluster.name} ({c.ledger.currency})"] = (
                [hour_start(h.start) for h in c.ledger.hours],
                [h.idle_cents / 100 for h in c.ledger.hours],
            )
    if not series:
        return None
    currencies = [c.ledger.currency for c in costs if c.ledger is not None and c.ledger.hours]
    return charts.bars_by_time(
        _("Idle cost by hour"), series, _with_currency(_("idle cost"), currencies), money=True
    )


def _tco_figure(comparison: Comparison | None) -> dict | None:
    if comparison is None or comparison.tco is None:
        return None
    tco = comparison.tco
    return charts.grouped_bars(
        _("Same workload: cost per hour"),
        [_("split"), _("unified")],
        {_("cost per hour"): [tco.split_per_hour, tco.unified_per_hour]},
        _with_currency(_("cost per hour"), [comparison.unified.inputs.currency]),
        money=True,
    )


# CSV headers are stable identifiers for scripts, so they are not translated.
CLUSTER_COLUMNS = (
    "cluster", "kind", "window_start", "window_end", "cards", "currency",
    "capex_per_hour", "energy_per_hour", "energy_source", "it_power_watts", "power_samples",
    "pue", "operations_per_hour", "asset_per_hour", "workload_per_hour", "idle_per_hour",
    "allocated_ratio_mean", "allocated_samples", "tokens_per_second_mean",
    "samples_per_second_mean", "cost_per_1m_tokens", "cost_per_1k_samples", "prices_assumed",
    "covered_hours", "ledger_cost", "ledger_billed", "ledger_idle",
    # The load the cost per 1M tokens was measured at (the page's per-inference-card note).
    "inference_cards_held_mean", "tokens_per_second_per_inference_card",
)  # fmt: skip


def _csv(filename: str, header: tuple[str, ...], rows: list[list]) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    writer = csv_writer(response)
    writer.writerow(header)
    writer.writerows(rows)
    return response


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"


def clusters_csv(costs: list[ClusterCost]) -> HttpResponse:
    rows = []
    for c in costs:
        a, alloc = c.asset, c.allocation
        rows.append(
            [
                c.cluster.name,
                c.cluster.kind,
                c.start.isoformat(),
                c.end.isoformat(),
                c.cards,
                c.inputs.currency,
                _num(a.capex_per_hour if a else None),
                _num(a.energy.cost_per_hour if a else None),
                ("measured" if a.energy.measured else "tdp_x_load_factor") if a else "",
                _num(a.energy.it_power_watts if a else None),
                c.power.count if c.power else 0,
                c.inputs.pue,
                _num(a.operations_per_hour if a else None),
                _num(a.per_hour if a else None),
                _num(alloc.workload_per_hour if alloc else None),
                _num(alloc.idle_per_hour if alloc else None),
                _num(c.allocated.mean if c.allocated else None),
                c.allocated.count if c.allocated else 0,
                _num(c.tokens.mean if c.tokens else None),
                _num(c.samples.mean if c.samples else None),
                _num(c.cost_per_million_tokens),
                _num(c.cost_per_thousand_samples),
                c.inputs.is_assumption,
                _num(c.covered_hours),
                *(
                    [f"{v / 100:.2f}" for v in (led.cost_cents, led.billed_cents, led.idle_cents)]
                    if (led := c.ledger)
                    else ["", "", ""]
                ),
                _num(c.inference_cards_held),
                _num(c.tokens_per_inference_card),
            ]
        )
    return _csv("cost-clusters.csv", CLUSTER_COLUMNS, rows)


def comparison_csv(comparison: Comparison | None) -> HttpResponse:
    rows: list[list] = []
    if comparison is not None:
        tco, ledger = comparison.tco, comparison.ledger
        rows = [
            ["unified_cluster", comparison.unified.cluster.name],
            ["baseline_cluster", comparison.baseline.cluster.name],
            ["workload_cards", _num(tco.workload_cards if tco else None)],
            ["unified_cards_needed", _num(tco.unified_cards_needed if tco else None)],
            ["split_cards_needed", _num(tco.split_cards_needed if tco else None)],
            ["unified_per_hour", _num(tco.unified_per_hour if tco else None)],
            ["split_per_hour", _num(tco.split_per_hour if tco else None)],
            ["saving_per_month", _num(tco.saving_per_month if tco else None)],
            ["migration_cost", _num(comparison.migration.value)],
            ["migration_cost_assumed", comparison.migration.assumed],
            ["payback_months", _num(comparison.payback_months)],
            ["capex_total", _num(ledger.capex_total)],
            ["reused_value", _num(ledger.reused_value)],
            ["new_capex", _num(ledger.new_capex)],
            ["budget", _num(ledger.budget)],
            ["budget_assumed", ledger.budget_assumed],
            ["capex_avoided", _num(ledger.capex_avoided)],
            ["budget_left", _num(ledger.budget_left)],
        ]
    return _csv("cost-comparison.csv", ("figure", "value"), rows)


LEDGER_COLUMNS = (
    "cluster", "hour_start", "covered_seconds", "capacity_card_seconds", "held_card_seconds",
    "overcommitted", "cost", "billed", "idle", "currency", "state", "revision",
    "allocated_idle", "unallocated_idle",
)  # fmt: skip


def ledger_csv(costs: list[ClusterCost]) -> HttpResponse:
    """Every cluster's ledger by hour: billed + idle = cost in each row and in total."""
    rows = []
    for c in costs:
        if c.ledger is None:
            continue
        for h in c.ledger.hours:
            rows.append(
                [
                    c.cluster.name,
                    hour_start(h.start).isoformat(),
                    _num(h.covered_seconds),
                    _num(h.capacity_card_seconds),
                    _num(h.held_card_seconds),
                    h.overcommitted,
                    f"{h.cost_cents / 100:.2f}",
                    f"{h.billed_cents / 100:.2f}",
                    f"{h.idle_cents / 100:.2f}",
                    c.ledger.currency,
                    h.state,
                    h.revision,
                    f"{h.allocated_idle_cents / 100:.2f}",
                    f"{h.unallocated_idle_cents / 100:.2f}",
                ]
            )
    return _csv("cost-ledger.csv", LEDGER_COLUMNS, rows)


SHOWBACK_COLUMNS = (
    "cluster", "workload", "kind", "cards_requested", "cards_held_mean", "card_hours",
    "cost_per_hour", "cost_window", "currency", "covered_hours", "window_hours", "basis",
)  # fmt: skip


def showback_csv(rows) -> HttpResponse:
    return _csv(
        "showback.csv",
        SHOWBACK_COLUMNS,
        [
            [
                r.cluster,
                r.workload,
                r.kind,
                _num(r.cards_requested),
                _num(r.cards_held_mean),
                _num(r.card_hours),
                _num(r.cost_per_hour),
                f"{r.cost_window:.2f}",
                r.currency,
                _num(r.covered_hours),
                _num(r.window_hours),
                r.basis,
            ]
            for r in rows
        ],
    )
