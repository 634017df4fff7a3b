"""Evidence nobody can plant alone (issue 31 §4): an exporter target, PromQL data source or
serving binding counts on a plan's gate only if someone other than the requester created or
approved it, and one value is kept per (series, time, source)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from rest_framework.test import APIClient

from telemetry.catalogue.registry import entities_resolve
from telemetry.catalogue.vouching import evidence_source_approve, evidence_source_authored
from telemetry.models import ExporterTarget, MetricDefinition, PromQLDataSource, Sample
from telemetry.read import window_aggregate
from telemetry.receivers.twin import samples_write as twin_write
from telemetry.store.provenance import source_exporter, trust_resolve
from telemetry.store.samples import samples_write
from tests.access import ApiAccessCases

pytestmark = pytest.mark.django_db
T = 1_780_000_000.0


def _planted(cluster, author):
    metric = MetricDefinition.objects.create(name="lat_seconds", entity_kind="workload")
    entity = entities_resolve(cluster, [("workload", "w")])[("workload", "w")]
    target = ExporterTarget(name="rt-fake", url="http://10.0.0.9/metrics", cluster=cluster)
    evidence_source_authored(source=target, user_id=author.pk)
    target.save()
    twin_write([(metric.pk, entity, T + i, 5.0) for i in range(3)])
    samples_write([(metric.pk, entity, T + 10 + i, 0.001) for i in range(4)],
                  provenance=source_exporter(target))  # fmt: skip
    return metric, entity, target


def _read(cluster, requester_id):
    return window_aggregate(
        metric="lat_seconds",
        cluster_id=cluster.pk,
        entity_kind="workload",
        entity_key="w",
        aggregation="min",
        start=datetime.fromtimestamp(T - 1, tz=UTC),
        end=datetime.fromtimestamp(T + 60, tz=UTC),
        trusted=[],
        requester_id=requester_id,
    )


def test_an_exporter_the_requester_added_is_no_evidence_on_their_plan_until_another_approves(
    cluster, users
):
    operator, other = users["operator"], users["approver"]
    _, _, target = _planted(cluster, operator)
    mine = _read(cluster, operator.pk)
    assert (mine.value, mine.sources, mine.ignored) == (5.0, {"twin": 3}, {"exporter:rt-fake": 4})
    # Someone else's plan counts it (they did not make it), and so does the page (no requester).
    assert _read(cluster, other.pk).sources == {"twin": 3, "exporter:rt-fake": 4}
    with pytest.raises(ValidationError, match="another operator"):
        evidence_source_approve(source=target, user_id=operator.pk)
    assert _read(cluster, operator.pk).value == 5.0
    evidence_source_approve(source=target, user_id=other.pk)
    assert _read(cluster, operator.pk).sources == {"twin": 3, "exporter:rt-fake": 4}
    # Changing it makes the editor its author again: the approval lapses.
    target.refresh_from_db()
    evidence_source_authored(source=target, user_id=operator.pk)
    target.save()
    assert _read(cluster, operator.pk).ignored == {"exporter:rt-fake": 4}


def test_a_data_source_only_the_requester_vouched_for_is_not_trusted(cluster, users):
    operator, other = users["operator"], users["approver"]
    source = PromQLDataSource(cluster=cluster, url="http://10.0.0.7:9090")
    evidence_source_authored(source=source, user_id=operator.pk)
    source.save()
    trust = trust_resolve(cluster_id=cluster.pk, selectors=[], requester_id=operator.pk)
    assert not trust.datasource
    assert trust_resolve(cluster_id=cluster.pk, selectors=[], requester_id=other.pk).datasource
    evidence_source_approve(source=source, user_id=other.pk)
    assert trust_resolve(cluster_id=cluster.pk, selectors=[], requester_id=operator.pk).datasource


def test_an_untrusted_writer_arriving_first_does_not_take_the_trusted_values_slot(cluster, users):
    metric, entity, target = _planted(cluster, users["operator"])
    when = T + 30
    first = samples_write([(metric.pk, entity, when, 0.001)], provenance=source_exporter(target))
    second = twin_write([(metric.pk, entity, when, 7.0)])  # the same point, another writer
    again = twin_write([(metric.pk, entity, when, 7.0)])  # a replay stays one row
    assert (first.inserted, second.inserted, again.inserted) == (1, 1, 0)
    at = Sample.objects.filter(
        metric=metric, entity_id=entity, ts=datetime.fromtimestamp(when, UTC)
    )
    assert sorted(at.values_list("value", flat=True)) == [0.001, 7.0]
    # Rows of unknown origin are one writer too: a replay of them is not stored twice.
    assert samples_write([(metric.pk, entity, when, 1.0)]).inserted == 1
    assert samples_write([(metric.pk, entity, when, 1.0)]).inserted == 0


class TestEvidenceApproveAccess(ApiAccessCases):
    """Approving evidence is an operator's command (others 403, anonymous 401)."""

    route = "api:evidence-source-approve"
    method = "post"
    content_type = "application/json"
    allowed_roles = ("operator",)

    def get_url(self, users) -> str:
        from inventory.models import Cluster

        cluster, _ = Cluster.objects.get_or_create(name="evidence-access")
        target, _ = ExporterTarget.objects.get_or_create(
            name="evidence-access", url="http://10.0.0.3/metrics", cluster=cluster
        )
        return reverse("api:evidence-source-approve", args=["exporter-targets", target.pk])


def test_the_api_approves_for_another_operator_and_refuses_the_author(cluster, users):
    from accounts.models import User
    from accounts.services.roles import ROLE_OPERATOR, roles_ensure

    second = User.objects.create_user(username="op2", password="x", is_staff=True)
    second.groups.add(roles_ensure()[ROLE_OPERATOR])
    _, _, target = _planted(cluster, users["operator"])
    url = reverse("api:evidence-source-approve", args=["exporter-targets", target.pk])
    client = APIClient()
    client.force_authenticate(users["operator"])
    refused = client.post(url)
    assert refused.status_code == 400 and "another operator" in str(refused.json())
    target.refresh_from_db()
    assert target.approved_by_id is None
    bad = client.post(reverse("api:evidence-source-approve", args=["nothing", target.pk]))
    assert bad.status_code == 400 and "kind" in bad.json()["errors"]
    client.force_authenticate(second)
    done = client.post(url)
    assert done.status_code == 200, done.json()
    assert (done.json()["approved_by"], done.json()["created_by"]) == (
        second.pk,
        users["operator"].pk,
    )
    assert _read(cluster, users["operator"].pk).sources == {"twin": 3, "exporter:rt-fake": 4}
