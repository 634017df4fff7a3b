"""Cost page, CSV exports, inputs form and cost API over telemetry in the real store."""

from __future__ import annotations

import csv
import io

import pytest

from cost.model import HOURS_PER_MONTH
from cost.models import CostAssumptions
from inventory.models import Cluster
from tests.access import ApiAccessCases, PageAccessCases
from tests.cost.cost_data import add_workload, make_cluster, write_cluster

INPUTS = {
    "currency": "USD",
    "card_price": 10_000.0,
    "other_capex_share": 0.5,
    "amortisation_years": 5.0,
    "electricity_price_per_kwh": 0.10,
    "pue": 1.2,
    "load_factor": 0.8,
    "operations_per_card_year": 876.0,
    "budget": 1_000_000.0,
    "reused_hardware_share": 0.2,
    "migration_cost": 12_000.0,
    "is_assumption": True,
}
# 100 cards: capex 1.5 M / 43,800 h, energy 50 kW × 1.2 × 0.10 = 6, operations 10 per hour
UNIFIED_PER_HOUR = 1_500_000 / 43_800 + 6.0 + 10.0
PER_CARD_HOUR = UNIFIED_PER_HOUR / 100


@pytest.fixture
def priced(db, tenants):
    CostAssumptions.objects.create(**INPUTS)
    uni = make_cluster("uni", Cluster.Kind.UNIFIED, cards=100)
    legacy = make_cluster("legacy", Cluster.Kind.LEGACY, cards=50)
    write_cluster(
        uni,
        {
            "cluster_power_watts": [40_000.0, 60_000.0],
            "cluster_utilization_allocated_ratio": [0.7, 0.8],
            "cluster_inference_tokens_per_second": [1000.0, 1000.0],
            "cluster_training_samples_per_second": [2.0, 2.0],
        },
    )
    write_cluster(legacy, {"cluster_utilization_allocated_ratio": [0.5, 0.5]})
    add_workload(uni, tenants["acme"], "acme-chat", "inference", 20, [30.0, 30.0])
    add_workload(uni, tenants["panda"], "panda-train", "training", 40, [10.0, 10.0])
    add_workload(uni, tenants["acme"], "acme-queued", "training", 16, None)
    return {"uni": uni, "legacy": legacy}


class TestCostPageAccess(PageAccessCases):
    url = "/cost/"


class TestClusterCostApiAccess(ApiAccessCases):
    url = "/api/v1/cost/clusters/"
    allowed_roles = ("operator", "approver")


class TestComparisonApiAccess(ApiAccessCases):
    url = "/api/v1/cost/comparison/"
    allowed_roles = ("operator", "approver")

    @pytest.fixture(autouse=True)
    def _clusters(self, priced):
        return priced


class TestShowbackApiAccess(ApiAccessCases):
    url = "/api/v1/cost/showback/"


def test_cluster_cost_api_computes_every_figure_from_the_store(priced, client_as):
    data = client_as("operator").get("/api/v1/cost/clusters/").json()["results"]
    by_name = {row["cluster"]: row for row in data}
    uni, legacy = by_name["uni"], by_name["legacy"]
    assert uni["asset"]["energy_source"] == "measured"
    assert uni["measurements"]["power"] == {
        "metric": "cluster_power_watts", "mean": 50_000.0, "samples": 2,
    }  # fmt: skip
    assert uni["asset"]["per_hour"] == pytest.approx(UNIFIED_PER_HOUR)
    # Billed what each held over the covered time: chat 30 cards, training 10 (not its
    # request of 40), the queued job nothing; billed + idle = cost to the cent.
    ledger = uni["ledger"]
    covered_hours = ledger["covered_seconds"] / 3600
    assert 0 < covered_hours < 0.1
    # Each ledger hour is rounded to the cent: data that straddles an hour's edge (a test run
    # at hh:59) is two hours, each up to half a cent off the unrounded total.
    cents = len(ledger["hours"])
    assert ledger["cost_cents"] == pytest.approx(UNIFIED_PER_HOUR * covered_hours * 100, abs=cents)
    assert ledger["billed_cents"] + ledger["idle_cents"] == ledger["cost_cents"]
    billed = 40 * PER_CARD_HOUR * covered_hours * 100
    assert ledger["billed_cents"] == pytest.approx(billed, abs=cents)
    assert ledger["mean_cards_held"] == pytest.approx(40.0)
    assert sum(h["cost_cents"] for h in ledger["hours"]) == ledger["cost_cents"]
    assert uni["workload_per_hour"] == pytest.approx(40 * PER_CARD_HOUR)
    assert uni["idle_per_hour"] == pytest.approx(60 * PER_CARD_HOUR)
    # A token pays for the cards that served it: the 30 cards chat held, over 1,000 tokens/s
    # (3.6 M tokens an hour); the idle 60 cards are the ledger's idle, not in the token.
    assert uni["cost_per_1m_tokens"] == pytest.approx(30 * PER_CARD_HOUR / 3.6)
    # Samples still absorb idle: training's share of the billed cost, of the whole cluster.
    assert uni["cost_per_1k_samples"] == pytest.approx(UNIFIED_PER_HOUR * 10 / 40 / 7.2)
    # ... at the load it was measured at: 1,000 tokens/s on the 30 cards chat held.
    assert uni["tokens_per_second_per_inference_card"] == pytest.approx(1000.0 / 30, rel=1e-5)
    assert uni["inference_cards_held_mean"] == pytest.approx(30.0)
    assert legacy["tokens_per_second_per_inference_card"] is None
    # no power telemetry: 50 cards × 500 W TDP × 0.8 load factor
    assert legacy["asset"]["energy_source"] == "tdp_x_load_factor"
    assert legacy["asset"]["it_power_watts"] == pytest.approx(20_000.0)
    assert legacy["workload_per_hour"] is None  # no workloads: not a made-up zero


def test_comparison_prices_the_same_workload_and_the_payback(priced, client_as):
    data = (
        client_as("operator")
        .get("/api/v1/cost/comparison/", {"unified": "uni", "baseline": "legacy"})
        .json()
    )
    tco = data["same_workload_tco"]
    assert tco["workload_cards"] == pytest.approx(75.0)
    assert tco["unified_cards_needed"] == pytest.approx(100.0)
    assert tco["split_cards_needed"] == pytest.approx(150.0)
    saving = 50 * PER_CARD_HOUR * HOURS_PER_MONTH
    assert tco["saving_per_month"] == pytest.approx(saving)
    assert data["payback_months"] == pytest.approx(12_000.0 / saving)
    assert data["internal_ledger"]["new_capex"] == pytest.approx(1_200_000.0)
    assert data["internal_ledger"]["within_budget"] is False


def test_comparison_names_an_unknown_cluster(priced, client_as):
    response = client_as("operator").get("/api/v1/cost/comparison/", {"unified": "nope"})
    assert response.status_code == 400 and "nope" in response.json()["errors"]["unified"][0]


def test_operator_page_shows_sources_inputs_and_both_ledgers(priced, client_as):
    page = client_as("operator").get("/cost/").content.decode()
    assert "measured: cluster_power_watts, mean 50000 W of 2 samples" in page
    assert "estimated: TDP 500 W × load factor 0.8 = 20000 W" in page
    assert "(assumed prices)" in page
    assert "at 33.3 tokens/s per inference card, as measured" in page
    assert "Payback of the migration" in page and "Budget left" in page
    assert 'data-figure="cost-figure"' in page and "plotly/plotly.min.js" in page


def test_customer_sees_only_their_tenants_showback(priced, client_as):
    page = client_as("customer").get("/cost/").content.decode()
    assert "acme-chat" in page and "acme-queued" in page
    assert "panda-train" not in page and "Idle cost" not in page
    other = client_as("other_customer").get("/cost/?format=csv").content.decode()
    rows = list(csv.DictReader(io.StringIO(other)))
    assert [r["workload"] for r in rows] == ["panda-train"]
    # Billed for the minutes the cluster reported, not the 24 h window.
    covered = float(rows[0]["covered_hours"])
    assert 0 < covered < 0.2 and float(rows[0]["window_hours"]) == pytest.approx(24)
    # Billed the 10 cards it held, not its request of 40, to the cent.
    assert float(rows[0]["cost_window"]) == pytest.approx(10 * PER_CARD_HOUR * covered, abs=0.01)
    assert float(rows[0]["cards_held_mean"]) == pytest.approx(10.0)


def test_showback_api_is_tenant_scoped(priced, client_as):
    client = client_as("customer")
    rows = client.get("/api/v1/cost/showback/").json()["results"]
    assert {r["workload"] for r in rows} == {"acme-chat", "acme-queued"}
    chat = next(r for r in rows if r["workload"] == "acme-chat")
    assert chat["cost_per_hour"] == pytest.approx(30 * PER_CARD_HOUR)
    assert client.get("/api/v1/cost/showback/?tenant=panda").status_code == 403
    staff = client_as("operator").get("/api/v1/cost/showback/?tenant=panda").json()["results"]
    assert [r["workload"] for r in staff] == ["panda-train"]


def test_cluster_csv_has_one_row_per_cluster_with_the_window(priced, client_as):
    response = client_as("operator").get("/cost/?format=csv&table=clusters&hours=6")
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [r["cluster"] for r in rows] == ["legacy", "uni"]
    uni = rows[1]
    assert float(uni["asset_per_hour"]) == pytest.approx(UNIFIED_PER_HOUR, rel=1e-5)
    assert uni["energy_source"] == "measured" and uni["power_samples"] == "2"
    # The load the cost per 1M tokens was measured at, as the page states it: 30 inference
    # cards held, 1,000 tokens/s on them; none on the cluster with no inference.
    assert float(uni["inference_cards_held_mean"]) == pytest.approx(30.0)
    assert float(uni["tokens_per_second_per_inference_card"]) == pytest.approx(
        1000.0 / 30, rel=1e-5
    )
    assert float(uni["cost_per_1m_tokens"]) == pytest.approx(30 * PER_CARD_HOUR / 3.6, rel=1e-5)
    assert rows[0]["inference_cards_held_mean"] == ""
    assert rows[0]["tokens_per_second_per_inference_card"] == ""
    comparison = client_as("operator").get("/cost/?format=csv&table=comparison").content.decode()
    assert "payback_months" in comparison and "split_cards_needed,150" in comparison


def _post(client, **changes):
    data = {**INPUTS, "cluster": "", **changes}
    data["is_assumption"] = "on" if data["is_assumption"] else ""
    return client.post("/cost/", data)


@pytest.mark.parametrize(
    "field,value,message",
    [
        ("pue", 5.0, "less than or equal to 3.0"),
        ("pue", 0.5, "greater than or equal to 1.0"),
        ("card_price", -1, "greater than or equal to 0.01"),
        ("amortisation_years", 0, "greater than or equal to 0.5"),
        ("reused_hardware_share", 1.5, "less than or equal to 1.0"),
        ("currency", "U1", "three-letter"),
    ],
)
def test_bad_inputs_are_refused_with_errors_and_nothing_saved(
    db, users, client_as, field, value, message
):
    response = _post(client_as("operator"), **{field: value})
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not CostAssumptions.objects.exists()


def test_operator_saves_default_then_override_and_updates_in_place(priced, client_as):
    client = client_as("operator")
    assert _post(client, pue=1.5).status_code == 302
    assert CostAssumptions.objects.get(cluster=None).pue == 1.5
    assert _post(client, cluster=priced["legacy"].pk, pue=1.1, currency="eur").status_code == 302
    override = CostAssumptions.objects.get(cluster=priced["legacy"])
    assert (override.pue, override.currency) == (1.1, "EUR")
    assert CostAssumptions.objects.count() == 2
    legacy = client.get("/api/v1/cost/clusters/").json()["results"][0]
    assert legacy["inputs"]["applies_to"] == "legacy" and legacy["inputs"]["pue"] == 1.1


@pytest.mark.parametrize("role", ["approver", "customer"])
def test_only_operators_may_change_inputs(db, users, client_as, role):
    assert _post(client_as(role), pue=2.0).status_code == 403
    assert not CostAssumptions.objects.exists()


def test_each_customer_sees_its_own_ledger_and_never_the_internal_one(priced, client_as):
    # acme on the unified cluster: acme-chat held 30 cards (acme-queued held none) of the
    # 40 held in all; split needs 30 / 0.5, unified 30 / 0.75 cards.
    saving = (60 - 40) * PER_CARD_HOUR * HOURS_PER_MONTH
    share = 12_000.0 * 30 / 40
    ledgers = client_as("customer").get("/api/v1/cost/showback/").json()["customer_ledgers"]
    assert [entry["tenant"] for entry in ledgers] == ["acme"]
    acme = ledgers[0]
    assert acme["split_per_hour"] == pytest.approx(60 * PER_CARD_HOUR)
    assert acme["unified_per_hour"] == pytest.approx(40 * PER_CARD_HOUR)
    assert acme["saving_per_month"] == pytest.approx(saving)
    assert acme["migration_cost"] == pytest.approx(share)
    assert acme["payback_months"] == pytest.approx(share / saving)
    page = client_as("customer").get("/cost/").content.decode()
    assert "Your ledger: split baseline vs unified cluster" in page
    assert "Internal ledger" not in page and "Budget" not in page and "panda" not in page
    staff = client_as("operator").get("/cost/").content.decode()
    assert "Customer ledger per tenant" in staff and "Capex avoided" in staff


def test_without_entered_figures_the_payback_uses_a_labelled_migration_assumption(
    priced, client_as
):
    CostAssumptions.objects.update(migration_cost=None, budget=None)
    data = (
        client_as("operator")
        .get("/api/v1/cost/comparison/", {"unified": "uni", "baseline": "legacy"})
        .json()
    )
    assert data["migration_cost"] == {"value": pytest.approx(1_500.0 * 100), "assumed": True}
    assert data["payback_months"] > 0
    assert data["internal_ledger"]["budget_assumed"] is True
    assert data["internal_ledger"]["budget"] > 0
    page = client_as("operator").get("/cost/").content.decode()
    assert "assumption: 1,500 per card × 100 cards" in page


def test_money_axes_name_their_currency_and_read_with_separators(priced, client_as):
    context = client_as("operator").get("/cost/").context
    axis = context["cost_figure"]["layout"]["yaxis"]
    assert "USD" in axis["title"]["text"]
    assert axis["tickformat"].startswith(",")
