"""Pages open on the operator's default clusters, never on a test run that sorts first."""

from __future__ import annotations

import pytest

from cost.selectors import default_pair
from dashboards.selectors.common import cluster_pick
from inventory.models import Cluster
from inventory.services import cluster_default_set


@pytest.mark.django_db
def test_a_marked_default_wins_over_a_cluster_that_sorts_first():
    Cluster.objects.create(name="aa-test-run", kind=Cluster.Kind.UNIFIED)
    demo = Cluster.objects.create(name="unified-demo", kind=Cluster.Kind.UNIFIED)
    assert cluster_pick(None).name == "aa-test-run"  # nothing marked: today's rule
    cluster_default_set(demo)
    assert cluster_pick(None) == demo
    assert cluster_pick("aa-test-run").name == "aa-test-run"  # an explicit choice still wins


@pytest.mark.django_db
def test_marking_a_default_replaces_only_the_default_of_its_side():
    legacy = Cluster.objects.create(name="legacy-h100", kind=Cluster.Kind.LEGACY)
    first = Cluster.objects.create(name="unified-demo", kind=Cluster.Kind.UNIFIED)
    second = Cluster.objects.create(name="bb-other", kind=Cluster.Kind.UNIFIED)
    cluster_default_set(legacy)
    cluster_default_set(first)
    cluster_default_set(second)
    flagged = set(Cluster.objects.filter(default_for_pages=True).values_list("name", flat=True))
    assert flagged == {"legacy-h100", "bb-other"}


@pytest.mark.django_db
def test_the_cost_pair_takes_the_marked_defaults():
    class Row:
        def __init__(self, cluster):
            self.cluster = cluster

    rows = [
        Row(Cluster.objects.create(name="aa-split-test", kind=Cluster.Kind.SPLIT)),
        Row(Cluster.objects.create(name="aa-uni-test", kind=Cluster.Kind.UNIFIED)),
        Row(Cluster.objects.create(name="legacy-h100", kind=Cluster.Kind.LEGACY)),
        Row(Cluster.objects.create(name="unified-demo", kind=Cluster.Kind.UNIFIED)),
    ]
    unified, baseline = default_pair(rows)
    assert (unified.cluster.name, baseline.cluster.name) == ("aa-uni-test", "aa-split-test")
    cluster_default_set(rows[2].cluster)
    cluster_default_set(rows[3].cluster)
    unified, baseline = default_pair(rows)
    assert (unified.cluster.name, baseline.cluster.name) == ("unified-demo", "legacy-h100")


@pytest.mark.django_db
def test_the_report_opens_on_the_marked_defaults(client_as):
    Cluster.objects.create(name="aa-split-test", kind=Cluster.Kind.SPLIT)
    Cluster.objects.create(name="aa-uni-test", kind=Cluster.Kind.UNIFIED)
    cluster_default_set(Cluster.objects.create(name="legacy-h100", kind=Cluster.Kind.LEGACY))
    cluster_default_set(Cluster.objects.create(name="unified-demo", kind=Cluster.Kind.UNIFIED))
    response = client_as("operator").get("/report/")
    assert response.context["baseline"].name == "legacy-h100"
    assert response.context["unified"].name == "unified-demo"
