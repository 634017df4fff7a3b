"""/metrics/topology: the portal's node placement as a Prometheus info metric the recording
rules join on the server (telemetry.read.promql.rack_rules)."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from accounts.services.tokens import token_create
from inventory.models import Cluster, Node, Rack, Supernode
from telemetry.read.promql.rack_rules import HOST_KEY, NODE_RACK_INFO, RACK_KEY
from tests.access import ApiAccessCases


class TestTopologyEndpointAccess(ApiAccessCases):
    url = "/metrics/topology"
    allowed_roles = ("operator", "approver")


def _operator_client() -> APIClient:
    client = APIClient()
    token = token_create(name="prom-topology", scopes=["read"]).plaintext
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def _placement(response) -> set[tuple[str, str, str, str]]:
    families = {f.name: f for f in text_string_to_metric_families(response.content.decode())}
    return {
        (s.labels["cluster"], s.labels[HOST_KEY], s.labels[RACK_KEY], s.labels["rack"])
        for s in families[NODE_RACK_INFO].samples
        if s.value == 1
    }


@pytest.mark.django_db
def test_each_placed_node_is_one_series_naming_its_rack_and_unplaced_nodes_are_left_out():
    a = Cluster.objects.create(name="topo-a", kind=Cluster.Kind.UNIFIED)
    b = Cluster.objects.create(name="topo-b", kind=Cluster.Kind.UNIFIED)
    rack = Rack.objects.create(supernode=Supernode.objects.create(cluster=a, name="sn0"), name="r7")
    Node.objects.create(cluster=a, hostname="n1", rack=rack)
    Node.objects.create(cluster=a, hostname="n2")  # no rack: not in the placement
    other = Rack.objects.create(supernode=Supernode.objects.create(cluster=b, name="s"), name="x")
    Node.objects.create(cluster=b, hostname="m1", rack=other)
    client = _operator_client()
    response = client.get("/metrics/topology")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    assert _placement(response) == {
        ("topo-a", "n1", str(rack.pk), "r7"),
        ("topo-b", "m1", str(other.pk), "x"),
    }
    narrowed = client.get("/metrics/topology", {"cluster": "topo-a"})
    assert _placement(narrowed) == {("topo-a", "n1", str(rack.pk), "r7")}


@pytest.mark.django_db
def test_an_unknown_cluster_is_refused_by_name(cluster):
    response = _operator_client().get("/metrics/topology", {"cluster": ["unified-a", "nope"]})
    assert response.status_code == 400
    assert "unknown cluster: nope" in response.content.decode()


@pytest.mark.django_db
def test_a_tenant_token_cannot_scrape_the_topology(tenants):
    client = APIClient()
    issued = token_create(name="t", scopes=["read"], tenant=tenants["acme"])
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")
    assert client.get("/metrics/topology").status_code == 403
