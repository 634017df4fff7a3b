"""Gates count only the evidence their criteria trust, and say whose values they counted."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from accounts.api.authentication import IntegrationPrincipal
from accounts.services.tokens import token_create
from rollout.models import AuditEntry, Criterion, Measurement, PhaseKind
from rollout.services.analysis import analysis_run_step
from rollout.services.audit import Actor
from rollout.services.transitions import plan_start
from telemetry.models import Entity, MetricDefinition, SampleSource
from telemetry.store.provenance import source_for_principal
from telemetry.store.samples import samples_write
from tests.rollout.conftest import METRIC, write

pytestmark = pytest.mark.django_db


def test_a_criterion_naming_a_tenant_token_is_refused(plan_factory, tenants):
    plan = plan_factory()
    token = token_create(name="acme", scopes=["ingest"], tenant=tenants["acme"]).token
    criterion = Criterion(
        phase=plan.phases.get(kind=PhaseKind.PILOT),
        name="lat",
        metric=METRIC,
        entity_key="acme-chat",
        aggregation="p99",
        comparator="le",
        threshold=1.0,
        trusted_sources=[f"token:{token.pk}"],
    )
    with pytest.raises(ValidationError) as refused:
        criterion.full_clean()
    assert "never gate evidence" in str(refused.value.message_dict["trusted_sources"])


def test_an_ignored_source_is_audited_once_per_run_and_counted_in_every_measurement(
    plan_factory, users, clusters
):
    plan = plan_factory(
        criteria={PhaseKind.PILOT: [{"count": 2, "window_seconds": 300, "interval_seconds": 30}]}
    )
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan.refresh_from_db()
    run = plan.current_gate.runs.get()
    pusher = source_for_principal(
        IntegrationPrincipal(token_create(name="ops", scopes=["ingest"]).token)
    )
    metric = MetricDefinition.objects.get(name=METRIC).pk
    entity = Entity.objects.get(cluster=clusters["unified"], key="acme-chat").pk
    for seconds in (5, 40):
        when = run.traffic_at + timedelta(seconds=seconds)
        write(clusters["unified"], "acme-chat", when, 0.5)  # the twin (telemetry.receivers.twin)
        samples_write([(metric, entity, when.timestamp() + 1, 0.0)], provenance=pusher)
    for seconds in (30, 60):
        analysis_run_step(run_id=run.pk, now=run.traffic_at + timedelta(seconds=seconds))
    first, second = Measurement.objects.filter(result__run=run).order_by("seq")
    assert first.evidence == {"counted": {"twin": 1}, "ignored": {"token:ops": 1}}
    assert second.evidence == {"counted": {"twin": 2}, "ignored": {"token:ops": 2}}
    assert AuditEntry.objects.filter(plan=plan, action="evidence_ignored").count() == 1


def test_values_under_a_source_id_with_no_row_read_unknown_on_the_gate_and_the_plan_page(
    plan_factory, users, clusters, client_as
):
    plan = plan_factory(criteria={PhaseKind.PILOT: [{"window_seconds": 300}]})
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan.refresh_from_db()
    run = plan.current_gate.runs.get()
    metric = MetricDefinition.objects.get(name=METRIC).pk
    entity = Entity.objects.get(cluster=clusters["unified"], key="acme-chat").pk
    ghost = (SampleSource.objects.order_by("-pk").values_list("pk", flat=True).first() or 0) + 999
    for seconds in (5, 10):
        when = run.traffic_at + timedelta(seconds=seconds)
        write(clusters["unified"], "acme-chat", when, 0.5)
        samples_write([(metric, entity, when.timestamp() + 1, 0.0)], provenance=ghost)
        samples_write([(metric, entity, when.timestamp() + 2, 0.0)], provenance=ghost + 1)
    analysis_run_step(run_id=run.pk, now=run.traffic_at + timedelta(seconds=30))
    measured = Measurement.objects.get(result__run=run)
    # Two ids without a row read alike and are summed, not one overwriting the other.
    assert measured.evidence == {"counted": {"twin": 2}, "ignored": {"unknown": 4}}
    page = client_as("operator").get(reverse("migration-plan", args=[plan.pk]))
    assert page.status_code == 200


def test_an_exporter_the_requester_added_is_ignored_by_their_gate_and_flagged_on_the_page(
    plan_factory, users, clusters, client_as
):
    from telemetry.catalogue.vouching import evidence_source_authored
    from telemetry.models import ExporterTarget
    from telemetry.store.provenance import source_exporter

    plan = plan_factory(criteria={PhaseKind.PILOT: [{"window_seconds": 300}]})
    assert plan.created_by_id == users["operator"].pk
    target = ExporterTarget(
        name="rt-fake-vllm", url="http://10.0.0.9/m", cluster=clusters["unified"]
    )
    evidence_source_authored(source=target, user_id=users["operator"].pk)
    target.save()
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan.refresh_from_db()
    run = plan.current_gate.runs.get()
    metric = MetricDefinition.objects.get(name=METRIC).pk
    entity = Entity.objects.get(cluster=clusters["unified"], key="acme-chat").pk
    when = run.traffic_at + timedelta(seconds=5)
    write(clusters["unified"], "acme-chat", when, 0.5)
    samples_write([(metric, entity, when.timestamp(), 0.001)], provenance=source_exporter(target))
    analysis_run_step(run_id=run.pk, now=run.traffic_at + timedelta(seconds=30))
    measured = Measurement.objects.get(result__run=run)
    assert measured.evidence == {"counted": {"twin": 1}, "ignored": {"exporter:rt-fake-vllm": 1}}
    page = client_as("approver").get(reverse("migration-plan", args=[plan.pk]))
    html = page.content.decode()
    assert "exporter:rt-fake-vllm" in html and "recent" in html
    assert "no: made by the requester, not approved by another operator" in html
