"""Gate criteria visible and editable on the plan's page (issue 24, part 3).

The bug replayed: the new-plan page said "edit them on the plan before you start it", but a
draft plan showed no criteria and had no editor; only the Django admin could change them.
"""

from __future__ import annotations

from rollout.models import AuditEntry, Criterion, PhaseKind
from tests.access import PageAccessCases
from tests.rollout.conftest import plan_for_access


def _criterion_of(plan) -> Criterion:
    """A criterion on the access plan (its workload has no counterpart: a cluster figure)."""
    from telemetry.models import MetricDefinition

    MetricDefinition.objects.get_or_create(
        name="cluster_inference_slo_attainment_ratio", defaults={"entity_kind": "cluster"}
    )
    return Criterion.objects.create(
        phase=plan.phases.get(kind=PhaseKind.PILOT),
        name="cluster-slo",
        metric="cluster_inference_slo_attainment_ratio",
        entity_kind="cluster",
        entity_key="cluster",
        aggregation="mean",
        comparator="ge",
        threshold=0.95,
    )


class TestCriterionAddPage(PageAccessCases):
    route = "migration-criterion-new"
    method = "post"
    allowed_roles = ("operator",)

    def get_url(self, users) -> str:
        return f"/migrations/{plan_for_access().pk}/criteria/new/"


class TestCriterionChangePage(PageAccessCases):
    route = "migration-criterion"
    method = "post"
    allowed_roles = ("operator",)

    def get_url(self, users) -> str:
        plan = plan_for_access()
        return f"/migrations/{plan.pk}/criteria/{_criterion_of(plan).pk}/"


class TestCriterionDeletePage(PageAccessCases):
    route = "migration-criterion-delete"
    method = "post"
    allowed_roles = ("operator",)

    def get_url(self, users) -> str:
        plan = plan_for_access()
        return f"/migrations/{plan.pk}/criteria/{_criterion_of(plan).pk}/delete/"


def _form(criterion: Criterion, **changes) -> dict:
    prefix = f"c{criterion.pk}"
    fields = {
        "phase": criterion.phase_id,
        "name": criterion.name,
        "metric": criterion.metric,
        "entity_kind": criterion.entity_kind,
        "workload": criterion.workload_id or "",
        "entity_key": criterion.entity_key,
        "aggregation": criterion.aggregation,
        "comparator": criterion.comparator,
        "threshold": criterion.threshold,
        "window_seconds": criterion.window_seconds,
        "min_samples": criterion.min_samples,
        "initial_delay_seconds": criterion.initial_delay_seconds or "",
        "count": criterion.count,
        "interval_seconds": criterion.interval_seconds,
        "failure_limit": criterion.failure_limit,
        "inconclusive_limit": criterion.inconclusive_limit,
        **changes,
    }
    return {f"{prefix}-{k}": v for k, v in fields.items()}


def test_a_draft_plan_shows_its_criteria_with_an_editor_for_operators(client_as, plan_factory):
    plan = plan_factory(criteria={PhaseKind.GRAY: [{"name": "chat-latency"}]})
    page = client_as("operator").get(f"/migrations/{plan.pk}/").content.decode()
    assert "chat-latency" in page and "p99(inference_latency_p99_seconds[acme-chat #" in page
    assert f"/migrations/{plan.pk}/criteria/" in page  # edit / delete / add forms
    customer = client_as("customer").get(f"/migrations/{plan.pk}/").content.decode()
    assert "chat-latency" in customer  # visible to the tenant…
    assert f"/migrations/{plan.pk}/criteria/" not in customer  # …but not editable


def test_an_operator_edits_a_criterion_on_the_page_through_the_service(client_as, plan_factory):
    plan = plan_factory(criteria={PhaseKind.GRAY: [{"name": "chat-latency"}]})
    criterion = Criterion.objects.get(name="chat-latency")
    response = client_as("operator").post(
        f"/migrations/{plan.pk}/criteria/{criterion.pk}/",
        _form(criterion, threshold=0.8, window_seconds=90),
    )
    assert response.status_code == 302
    criterion.refresh_from_db()
    assert (criterion.threshold, criterion.window_seconds) == (0.8, 90)
    row = AuditEntry.objects.filter(plan=plan).order_by("-id").first()
    assert row.action == "criterion_change"  # the same service as the admin and the API


def test_a_page_edit_naming_another_tenants_workload_is_refused_and_nothing_changes(
    client_as, plan_factory, workloads, tenants
):
    plan = plan_factory(criteria={PhaseKind.GRAY: [{"name": "chat-latency"}]})
    criterion = Criterion.objects.get(name="chat-latency")
    other = workloads["unified:acme-batch"]
    other.tenant = tenants["panda"]
    other.save()
    client = client_as("operator")
    client.post(
        f"/migrations/{plan.pk}/criteria/{criterion.pk}/",
        _form(criterion, workload=other.pk, threshold=5),
    )
    criterion.refresh_from_db()
    assert criterion.workload_id == workloads["unified:acme-chat"].pk
    assert criterion.threshold == 1.0


def test_an_operator_adds_and_deletes_a_criterion_on_the_page(client_as, plan_factory, workloads):
    plan = plan_factory(criteria={PhaseKind.GRAY: [{"name": "chat-latency"}]})
    client = client_as("operator")
    new = {
        "new-phase": plan.phases.get(kind=PhaseKind.PILOT).pk,
        "new-name": "batch-latency",
        "new-metric": "inference_latency_p99_seconds",
        "new-entity_kind": "workload",
        "new-workload": workloads["unified:acme-batch"].pk,
        "new-aggregation": "p99",
        "new-comparator": "le",
        "new-threshold": 2,
        "new-window_seconds": 80,
        "new-min_samples": 3,
        "new-initial_delay_seconds": 40,
        "new-count": 5,
        "new-interval_seconds": 20,
        "new-failure_limit": 0,
        "new-inconclusive_limit": 1,
    }
    assert client.post(f"/migrations/{plan.pk}/criteria/new/", new).status_code == 302
    added = Criterion.objects.get(name="batch-latency")
    assert added.workload_id == workloads["unified:acme-batch"].pk
    response = client.post(f"/migrations/{plan.pk}/criteria/{added.pk}/delete/")
    assert response.status_code == 302
    assert not Criterion.objects.filter(name="batch-latency").exists()


def test_an_operator_switches_a_relative_criterion_to_the_live_baseline_on_the_page(
    client_as, plan_factory, workloads
):
    plan = plan_factory(criteria={PhaseKind.GRAY: [{"name": "chat-latency"}]})
    criterion = Criterion.objects.get(name="chat-latency")
    client = client_as("operator")
    edit = f"/migrations/{plan.pk}/criteria/{criterion.pk}/"
    page = client.get(f"/migrations/{plan.pk}/").content.decode()
    assert f'name="c{criterion.pk}-baseline_window"' in page  # offered in the editor
    changes = {
        "comparator": "le",
        "threshold": 1.2,
        "compare_to_baseline": "on",
        "baseline_workload": workloads["legacy:acme-chat"].pk,
        "baseline_window": "same_window",
    }
    assert client.post(edit, _form(criterion, **changes)).status_code == 302
    criterion.refresh_from_db()
    assert (criterion.compare_to_baseline, criterion.baseline_window) == (True, "same_window")
    page = client.get(f"/migrations/{plan.pk}/").content.decode()
    assert "over the same window" in page
    # A post that leaves the field out (an older page) keeps it rather than resetting it.
    assert client.post(edit, _form(criterion, threshold=1.3)).status_code == 302
    criterion.refresh_from_db()
    assert (criterion.threshold, criterion.baseline_window) == (1.3, "same_window")
    # An unknown window is refused, naming the field, and changes nothing.
    response = client.post(edit, _form(criterion, baseline_window="yesterday"), follow=True)
    body = response.content.decode()
    assert "Not saved: Baseline window: Select a valid choice." in body
    criterion.refresh_from_db()
    assert criterion.baseline_window == "same_window"
