"""Issue 26 §3: gate evidence cannot be forged through ingestion.

Replayed as found: right after ``start`` the operator who will request the promotion pushed
3,000 zeros for the gated TTFT metric with their own ingest token and the gate passed
("p95 = 0 ≤ 0.0001 holds; 3048 values"); a customer's tenant-bound exporter token pushed 900 s
values and made their gate fail and roll back. Neither may move the gate now: the measurement
counts only the sources its criterion trusts (by default the twin and the cluster's exporters),
shows the counts per source, and audits the ignored push.
"""

from __future__ import annotations

import time
from datetime import timedelta

import numpy as np
import pytest
from rest_framework.test import APIClient

from accounts.services.tokens import token_create
from rollout.models import AnalysisRun, AuditEntry, GateState, Measurement, PhaseKind, PlanState
from rollout.services.analysis import analysis_run_step
from rollout.services.audit import Actor
from rollout.services.transitions import plan_start
from telemetry.models import MetricDefinition
from telemetry.receivers.twin import frames_write_many, layout_for_keys, metrics_by_name

pytestmark = pytest.mark.django_db

TTFT = "inference_ttft_p99_seconds"
TWIN_VALUES = 48


@pytest.fixture
def gated(plan_factory, users, clusters):
    """A started plan whose pilot gate holds p95(TTFT of acme-chat) ≤ 0.5 s over 120 s."""
    MetricDefinition.objects.get_or_create(
        name=TTFT, defaults={"unit": "seconds", "entity_kind": "workload"}
    )
    plan = plan_factory(
        criteria={
            PhaseKind.PILOT: [
                {
                    "name": "ttft",
                    "metric": TTFT,
                    "aggregation": "p95",
                    "threshold": 0.5,
                    "window_seconds": 120,
                    "count": 1,
                    "min_samples": 10,
                }
            ]
        }
    )
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan.refresh_from_db()
    return plan, AnalysisRun.objects.get(gate=plan.current_gate)


def twin_writes(cluster, run, value: float) -> None:
    """The twin's frames for the step: 48 values of acme-chat's TTFT after the traffic moved."""
    layout = layout_for_keys(cluster, "workload", ["acme-batch", "acme-chat"])
    metric = metrics_by_name([TTFT])[TTFT].id
    start = run.traffic_at.timestamp()
    frames_write_many(
        layout=layout,
        batches=[
            (start + 1 + i, {metric: np.array([0.2, value], dtype=float)})
            for i in range(TWIN_VALUES)
        ],
    )


def push(token: str, cluster, run, value: float, n: int):
    start = run.traffic_at.timestamp() + 0.5
    rows = [
        {
            "metric": TTFT,
            "cluster": cluster.name,
            "entity_kind": "workload",
            "entity": "acme-chat",
            "ts": start + i * 0.01,
            "value": value,
        }
        for i in range(n)
    ]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client.post("/api/v1/telemetry/samples/", {"samples": rows}, format="json")


def measure(run):
    analysis_run_step(run_id=run.pk, now=run.traffic_at + timedelta(seconds=60))
    run.refresh_from_db()
    return Measurement.objects.get(result__run=run)


def test_the_requesters_own_token_pushing_zeros_does_not_pass_their_gate(gated, users, clusters):
    plan, run = gated
    assert run.traffic_at.timestamp() <= time.time() + 1
    twin_writes(clusters["unified"], run, value=1.5)  # the twin measures a slow service
    operator_token = token_create(
        name="ops-ci", scopes=["ingest"], owner=users["operator"]
    ).plaintext
    assert push(operator_token, clusters["unified"], run, 0.0, 3000).status_code == 201
    measured = measure(run)
    # The gate fails on the twin's values alone; the 3,000 zeros are shown and ignored.
    assert measured.outcome == "failed" and measured.samples == TWIN_VALUES
    assert measured.value == pytest.approx(1.5)
    assert measured.evidence == {"counted": {"twin": 48}, "ignored": {"token:ops-ci": 3000}}
    assert "ignored, untrusted: token ops-ci 3000" in measured.reason
    plan.refresh_from_db()
    assert plan.state == PlanState.ROLLED_BACK
    audit = AuditEntry.objects.get(plan=plan, action="evidence_ignored")
    assert "3000 values" in audit.reason and "from token ops-ci" in audit.reason


def test_a_customers_tenant_token_pushing_slow_values_does_not_roll_their_gate_back(
    gated, users, clusters, tenants
):
    plan, run = gated
    twin_writes(clusters["unified"], run, value=0.1)  # the twin measures a healthy service
    # An exporter's credential bound to the customer's tenant (issued by command, no owner).
    exporter = token_create(
        name="acme-exporter", scopes=["ingest"], tenant=tenants["acme"]
    ).plaintext
    assert push(exporter, clusters["unified"], run, 900.0, 900).status_code == 201
    measured = measure(run)
    assert measured.outcome == "successful" and measured.samples == TWIN_VALUES
    assert measured.evidence["ignored"] == {"token:acme-exporter@acme": 900}
    plan.refresh_from_db()
    assert plan.state == PlanState.RUNNING and plan.current_gate.state == GateState.PASSED
    assert AuditEntry.objects.filter(plan=plan, action="evidence_ignored").count() == 1


def test_only_untrusted_values_in_the_window_are_no_data_never_a_pass(gated, users, clusters):
    plan, run = gated
    operator_token = token_create(
        name="ops-ci", scopes=["ingest"], owner=users["operator"]
    ).plaintext
    assert push(operator_token, clusters["unified"], run, 0.0, 3000).status_code == 201
    measured = measure(run)
    assert measured.outcome == "inconclusive" and measured.samples == 0
    assert measured.reason.startswith("no data in the window")
    plan.refresh_from_db()
    assert plan.state == PlanState.PAUSED
