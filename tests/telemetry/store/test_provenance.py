"""Provenance: every stored value knows who wrote it, and a gate's read counts only the
sources it trusts (issue 26 §3)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest
from rest_framework.test import APIClient

from accounts.services.tokens import token_create
from inventory.models import Cluster
from telemetry.catalogue.registry import entities_resolve
from telemetry.models import ExporterTarget, Frame, MetricDefinition, Sample, SampleSource
from telemetry.read import window_aggregate
from telemetry.receivers.scrape import exporter_scrape
from telemetry.receivers.twin import frames_write_many, layout_for_keys, samples_write
from telemetry.store.provenance import (
    source_exporter,
    source_for_principal,
    trust_resolve,
    trust_selector_problems,
)
from telemetry.store.samples import samples_write as store_samples_write
from tests.telemetry.receivers.test_scrape import NOW, exporters, loopback_allowed, make_target
from tests.telemetry_fixtures import sample

__all__ = ["exporters", "loopback_allowed"]  # fixtures shared with test_scrape

pytestmark = pytest.mark.django_db
T = 1_780_000_000.0


def test_a_json_push_is_stored_with_the_pushing_tokens_source(cluster):
    issued = token_create(name="ci", scopes=["ingest"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")
    response = client.post("/api/v1/telemetry/samples/", {"samples": [sample()]}, format="json")
    assert response.status_code == 201
    stored = Sample.objects.select_related("source").get()
    assert stored.source.kind == SampleSource.Kind.TOKEN
    assert stored.source.token_id == issued.token.pk and stored.source.label == "token:ci"


def test_a_tenant_tokens_source_names_its_tenant_and_owner(tenants, users):
    issued = token_create(
        name="acme-exp", scopes=["ingest"], tenant=tenants["acme"], owner=users["customer"]
    )
    from accounts.api.authentication import IntegrationPrincipal

    source = SampleSource.objects.get(pk=source_for_principal(IntegrationPrincipal(issued.token)))
    assert (source.tenant_id, source.user_id) == (tenants["acme"].pk, users["customer"].pk)
    assert source.label == "token:acme-exp@acme"
    # One row per writer, not one per batch.
    again = source_for_principal(IntegrationPrincipal(issued.token))
    assert again == source.pk and SampleSource.objects.count() == 1


def test_a_scrape_is_stored_with_its_exporter_targets_source(cluster, exporters):
    target = make_target(cluster, exporters.url("/dcgm"), kind="dcgm")
    assert exporter_scrape(target=target, now=NOW)["ok"]
    util = Sample.objects.get(metric__name="accelerator_utilization_ratio", entity__key="GPU-aaa")
    assert util.source_id == source_exporter(target)
    assert util.source.label == f"exporter:{target.name}"


def test_the_twins_rows_and_raw_frames_are_tagged_as_the_twins(cluster):
    metric = MetricDefinition.objects.create(name="m_ratio", entity_kind="workload")
    refs = entities_resolve(cluster, [("workload", "a"), ("workload", "b")])
    samples_write([(metric.pk, refs[("workload", "a")], T, 1.0)])
    layout = layout_for_keys(cluster, "workload", ["a", "b"])
    frames_write_many(layout=layout, batches=[(T, {metric.pk: np.array([1.0, 2.0])})])
    twin = SampleSource.objects.get(key="twin")
    assert Sample.objects.get().source_id == twin.pk
    assert Frame.objects.get(resolution=0).source_id == twin.pk
    # Rollup frames merge raw frames; gates never read them, so they carry no source.
    assert not Frame.objects.filter(resolution__gt=0).exclude(source=None).exists()


def _three_writers(cluster: Cluster):
    metric = MetricDefinition.objects.create(name="lat_seconds", entity_kind="workload")
    entity = entities_resolve(cluster, [("workload", "w")])[("workload", "w")]
    target = ExporterTarget.objects.create(
        name="vllm", url="http://10.0.0.9/metrics", cluster=cluster
    )
    other = Cluster.objects.create(name="elsewhere", kind=Cluster.Kind.UNIFIED)
    foreign = ExporterTarget.objects.create(
        name="far", url="http://10.0.0.8/metrics", cluster=other
    )
    samples_write([(metric.pk, entity, T + i, 1.0) for i in range(3)])  # the twin
    store_samples_write(
        [(metric.pk, entity, T + 10 + i, 2.0) for i in range(2)], provenance=source_exporter(target)
    )
    store_samples_write([(metric.pk, entity, T + 20, 3.0)], provenance=source_exporter(foreign))
    token = token_create(name="push", scopes=["ingest"]).token
    from accounts.api.authentication import IntegrationPrincipal

    store_samples_write(
        [(metric.pk, entity, T + 30 + i, 0.0) for i in range(5)],
        provenance=source_for_principal(IntegrationPrincipal(token)),
    )
    store_samples_write([(metric.pk, entity, T + 40, 9.0)])  # before provenance: unknown
    return token


def _read(cluster, trusted):
    return window_aggregate(
        metric="lat_seconds",
        cluster_id=cluster.pk,
        entity_kind="workload",
        entity_key="w",
        aggregation="max",
        start=datetime.fromtimestamp(T - 1, tz=UTC),
        end=datetime.fromtimestamp(T + 60, tz=UTC),
        trusted=trusted,
    )


def test_by_default_a_gate_counts_the_twin_and_this_clusters_exporters_only(cluster):
    _three_writers(cluster)
    result = _read(cluster, [])
    assert (result.value, result.samples) == (2.0, 5)
    assert result.sources == {"twin": 3, "exporter:vllm": 2}
    assert result.ignored == {"token:push": 5, "exporter:far": 1, "unknown": 1}
    assert _read(cluster, None).samples == 12  # pages (no trust given) read everything


def test_a_criterion_may_narrow_trust_or_name_an_operator_level_token(cluster):
    token = _three_writers(cluster)
    assert _read(cluster, ["exporter:vllm"]).sources == {"exporter:vllm": 2}
    assert _read(cluster, ["twin", f"token:{token.pk}"]).sources == {"twin": 3, "token:push": 5}


def test_a_tenant_token_is_never_trusted_even_when_named(cluster, tenants):
    issued = token_create(name="acme", scopes=["ingest"], tenant=tenants["acme"])
    from accounts.api.authentication import IntegrationPrincipal

    source_for_principal(IntegrationPrincipal(issued.token))
    selector = f"token:{issued.token.pk}"
    assert trust_selector_problems([selector]) == [
        f"{selector}: a tenant-bound token is never gate evidence"
    ]
    assert trust_resolve(cluster_id=cluster.pk, selectors=[selector]).source_ids == frozenset()


def test_selectors_are_checked(cluster):
    assert trust_selector_problems(["twin", "exporters", "datasource"]) == []
    assert trust_selector_problems("twin") == ["trusted sources must be a list of selectors"]
    problems = trust_selector_problems(["exporter:nope", "token:99999", "anyone"])
    assert problems[0] == "exporter:nope: no such exporter target"
    assert problems[1] == "token:99999: no such token"
    assert "use twin, exporters" in problems[2]
