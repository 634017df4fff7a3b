"""POST /api/v1/telemetry/samples/: atomic batches, named errors, idempotency, scopes."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from accounts.services.tokens import token_create
from telemetry.models import Entity, IngestionBatch, Rollup, Sample
from telemetry.store.compaction import rollups_compact
from tests.telemetry_fixtures import sample

URL = "/api/v1/telemetry/samples/"


def post(client, samples, **headers):
    return client.post(URL, {"samples": samples}, format="json", headers=headers)


@pytest.mark.django_db
def test_a_valid_batch_is_stored_with_rollups(ingest_client, cluster):
    batch = [sample(entity=f"node1/{i}", value=i / 10) for i in range(5)]
    response = post(ingest_client, batch)
    assert response.status_code == 201, response.json()
    assert response.json() == {"accepted": 5, "inserted": 5, "duplicates": 0}
    assert Sample.objects.count() == 5
    assert Entity.objects.filter(cluster=cluster, kind="accelerator").count() == 5
    rollups_compact(now=1_780_000_000 + 3 * 86400)
    assert Rollup.objects.filter(resolution=60).count() == 5


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("bad", "field", "message"),
    [
        ({"value": "high"}, "value", "must be a number"),
        ({"value": None}, "value", "must be a number"),
        ({"metric": "no_such_metric"}, "metric", "unknown metric"),
        ({"cluster": "nowhere"}, "cluster", "unknown cluster"),
        ({"entity_kind": "toaster"}, "entity_kind", "unknown entity_kind"),
        ({"entity_kind": "node"}, "entity_kind", "describes a accelerator"),
        ({"ts": "yesterday"}, "ts", "ISO 8601"),
        ({"ts": 10}, "ts", "outside the accepted window"),
        ({"entity": ""}, "entity", "non-empty"),
    ],
)
def test_one_bad_row_rejects_the_batch_naming_row_and_field(
    ingest_client, cluster, bad, field, message
):
    batch = [
        sample(entity="node1/0"),
        sample(entity="node1/1"),
        sample(**{"entity": "node1/2", **bad}),
    ]
    response = post(ingest_client, batch)
    assert response.status_code == 400
    body = response.json()
    assert (body["row"], body["field"]) == (2, field)
    assert message in body["detail"]
    assert not Sample.objects.exists()
    assert not Entity.objects.exists()


@pytest.mark.django_db
def test_a_body_without_samples_is_a_400(ingest_client, cluster):
    response = ingest_client.post(URL, {"rows": []}, format="json")
    assert response.status_code == 400
    assert response.json()["field"] == "samples"


@pytest.mark.django_db
def test_a_replay_with_the_same_key_writes_nothing_and_returns_the_first_answer(
    ingest_client, cluster
):
    batch = [sample(entity="node1/0")]
    first = post(ingest_client, batch, **{"Idempotency-Key": "abc-1"})
    replay = post(ingest_client, batch, **{"Idempotency-Key": "abc-1"})
    assert first.status_code == 201
    assert replay.status_code == 200
    assert replay.json() == first.json()
    assert replay["Idempotent-Replayed"] == "true"
    assert Sample.objects.count() == 1
    assert IngestionBatch.objects.count() == 1


@pytest.mark.django_db
def test_the_same_key_with_a_different_payload_is_a_422(ingest_client, cluster):
    post(ingest_client, [sample(value=0.1)], **{"Idempotency-Key": "abc-2"})
    response = post(ingest_client, [sample(value=0.9)], **{"Idempotency-Key": "abc-2"})
    assert response.status_code == 422
    assert "different payload" in response.json()["detail"]
    assert Sample.objects.get().value == 0.1


@pytest.mark.django_db
def test_a_rejected_batch_does_not_burn_its_idempotency_key(ingest_client, cluster):
    bad = post(ingest_client, [sample(value="x")], **{"Idempotency-Key": "k"})
    assert bad.status_code == 400
    assert not IngestionBatch.objects.exists()


@pytest.mark.django_db
def test_a_token_without_the_ingest_scope_is_refused(cluster):
    issued = token_create(name="reader", scopes=["read"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")
    response = post(client, [sample()])
    assert response.status_code == 403
    assert "'ingest' scope" in response.json()["detail"]
    assert not Sample.objects.exists()


@pytest.mark.django_db
def test_workload_samples_link_to_the_workload_and_its_tenant(ingest_client, workloads):
    response = post(
        ingest_client,
        [sample(metric="accelerator_power_watts", entity_kind="workload", entity="acme-chat")],
    )
    # accelerator_power_watts describes accelerators, so this is refused...
    assert response.status_code == 400
    response = post(ingest_client, [sample(entity_kind="workload", entity="ghost")])
    assert response.status_code == 400


@pytest.mark.django_db
def test_a_tenant_token_may_only_write_its_own_workloads(workloads, tenants):
    from telemetry.models import MetricDefinition

    MetricDefinition.objects.create(name="workload_qps", unit="1/s", entity_kind="workload")
    issued = token_create(name="acme-push", scopes=["ingest"], tenant=tenants["acme"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")
    own = post(client, [sample(metric="workload_qps", entity_kind="workload", entity="acme-chat")])
    assert own.status_code == 201, own.json()
    entity = Entity.objects.get(kind="workload", key="acme-chat")
    assert entity.tenant == tenants["acme"] and entity.workload == workloads["chat"]
    other = post(
        client, [sample(metric="workload_qps", entity_kind="workload", entity="panda-asr")]
    )
    assert other.status_code == 403
    accelerator = post(client, [sample()])
    assert accelerator.status_code == 403
    assert Sample.objects.count() == 1
