"""The plan form: an empty phase needs the operator's consent to a manual gate, and listing
workloads never puts the CSRF token in a URL."""

from __future__ import annotations

from rollout.models import AuditEntry, MigrationPlan


def form_body(workloads, clusters, **extra) -> dict:
    return {
        "tenant": workloads["legacy:acme-batch"].tenant_id,
        "name": "one-phase",
        "source_cluster": clusters["legacy"].pk,
        "target_cluster": clusters["unified"].pk,
        "pilot": [workloads["legacy:acme-batch"].pk],
        "gray_steps": "5, 25, 50, 100",
        "interval_seconds": 30,
        "count": 4,
        "required_approvals": 2,
        **extra,
    }


def test_an_empty_phase_is_refused_unless_the_operator_consents_to_a_manual_gate(
    client_as, workloads, clusters
):
    client = client_as("operator")
    refused = client.post("/migrations/new/", form_body(workloads, clusters))
    assert refused.status_code == 200 and "gray phase has no workloads" in refused.content.decode()
    assert not MigrationPlan.objects.filter(name="one-phase").exists()
    client.post("/migrations/new/", form_body(workloads, clusters, manual_empty_phases="on"))
    plan = MigrationPlan.objects.get(name="one-phase")
    assert plan.phases.get(kind="gray").manual_gate is True
    assert plan.phases.get(kind="pilot").manual_gate is False
    assert AuditEntry.objects.filter(plan=plan, action="manual_gate_on").count() == 1


def test_listing_workloads_posts_and_keeps_the_token_out_of_the_url(
    client_as, workloads, clusters, tenants
):
    client = client_as("operator")
    page = client.get("/migrations/new/").content.decode()
    assert 'formmethod="get"' not in page and 'name="list_workloads"' in page
    listed = client.post(
        "/migrations/new/",
        {
            "tenant": tenants["acme"].pk,
            "source_cluster": clusters["legacy"].pk,
            "list_workloads": "1",
        },
    )
    assert listed.status_code == 200
    assert f'value="{workloads["legacy:acme-chat"].pk}"' in listed.content.decode()
    assert not MigrationPlan.objects.exists()


def test_workloads_another_plan_holds_or_fully_moved_are_not_offered_or_accepted(
    client_as, workloads, clusters, tenants, plan_factory
):
    from rollout.models import PlanState, PlanWorkload

    plan = plan_factory()
    listing = {
        "tenant": tenants["acme"].pk,
        "source_cluster": clusters["legacy"].pk,
        "list_workloads": "1",
    }
    client = client_as("operator")
    chat, batch = workloads["legacy:acme-chat"], workloads["legacy:acme-batch"]

    def offered() -> set[int]:
        form = client.post("/migrations/new/", listing).context["form"]
        return {w.pk for name in ("pilot", "gray") for w in form.fields[name].queryset}

    assert {chat.pk, batch.pk} <= offered()  # a draft holds nothing yet
    MigrationPlan.objects.filter(pk=plan.pk).update(state=PlanState.RUNNING)
    assert not {chat.pk, batch.pk} & offered()
    posted = client.post("/migrations/new/", form_body(workloads, clusters, name="again"))
    assert posted.status_code == 200 and not MigrationPlan.objects.filter(name="again").exists()
    assert "valid choice" in posted.content.decode()  # no longer one of the offered ones

    # Succeeded: the batch job reached 100% on the target and is not offered again; a
    # workload the plan left below 100% is offered once more.
    MigrationPlan.objects.filter(pk=plan.pk).update(state=PlanState.SUCCEEDED)
    PlanWorkload.objects.filter(plan=plan, workload=batch).update(share=1)
    PlanWorkload.objects.filter(plan=plan, workload=chat).update(share=0.5)
    assert chat.pk in offered() and batch.pk not in offered()
    # Rolled back: everything is given back.
    MigrationPlan.objects.filter(pk=plan.pk).update(state=PlanState.ROLLED_BACK)
    assert {chat.pk, batch.pk} <= offered()
