"""Operators set a cluster's topology mapping in the admin; known nodes are placed on save."""

from __future__ import annotations

import pytest
from django.forms.models import model_to_dict

from inventory.models import Cluster, Node, TopologyMapping
from inventory.services import nodes_ensure

pytestmark = pytest.mark.django_db


def form(cluster: Cluster, **mapping) -> dict:
    prefix = "topology_mapping"
    fields = model_to_dict(cluster)
    data = {k: v for k, v in fields.items() if v is not None and v is not False}
    data.update(
        {
            f"{prefix}-TOTAL_FORMS": "1",
            f"{prefix}-INITIAL_FORMS": "0",
            f"{prefix}-MIN_NUM_FORMS": "0",
            f"{prefix}-MAX_NUM_FORMS": "1",
            f"{prefix}-0-default_supernode": "default",
        }
    )
    data.update({f"{prefix}-0-{k}": v for k, v in mapping.items()})
    return data


def test_an_operator_saves_a_hostname_pattern_and_known_nodes_get_their_racks(client_as):
    cluster = Cluster.objects.create(name="real-a", kind=Cluster.Kind.UNIFIED)
    nodes_ensure(cluster=cluster, hosts={"sn1-r04-n01", "login-01"}, registered_by_exporter=True)
    response = client_as("operator").post(
        f"/admin/inventory/cluster/{cluster.pk}/change/",
        form(cluster, hostname_pattern=r"^(?P<supernode>sn\d+)-(?P<rack>r\d+)-"),
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert TopologyMapping.objects.get(cluster=cluster).hostname_pattern.startswith("^(?P<")
    assert Node.objects.get(hostname="sn1-r04-n01").rack.name == "r04"
    assert Node.objects.get(hostname="login-01").rack is None  # the pattern does not say
    page = client_as("operator").get(response.url).content.decode()
    assert "Hostname pattern applied: 1 node placed or moved." in page


def test_saving_a_rack_label_says_it_applies_at_the_next_scrape(client_as):
    cluster = Cluster.objects.create(name="real-c", kind=Cluster.Kind.UNIFIED)
    nodes_ensure(cluster=cluster, hosts={"dgx-01"}, registered_by_exporter=True)
    response = client_as("operator").post(
        f"/admin/inventory/cluster/{cluster.pk}/change/",
        form(cluster, rack_label="rack"),
        follow=True,
    )
    page = response.content.decode()
    assert "applies at the next scrape or push of each node without a rack" in page
    assert Node.objects.get(hostname="dgx-01").rack is None


def test_a_bad_pattern_is_refused_in_the_admin_and_nothing_is_saved(client_as):
    cluster = Cluster.objects.create(name="real-b", kind=Cluster.Kind.UNIFIED)
    response = client_as("operator").post(
        f"/admin/inventory/cluster/{cluster.pk}/change/", form(cluster, hostname_pattern="^r(")
    )
    assert response.status_code == 200
    assert "Not a regular expression" in response.content.decode()
    assert not TopologyMapping.objects.filter(cluster=cluster).exists()
