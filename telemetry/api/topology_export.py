"""``/metrics/topology``: the portal's placement of nodes in racks as a Prometheus info metric.

A PromQL server scrapes it (as it scrapes kube-state-metrics' ``kube_node_labels``) so the
shipped recording rules can sum per-host figures per rack on the server
(``telemetry.read.promql.rack_rules``): at 100,000 cards a hardware page then reads one series
per rack instead of one per host. One series per placed node, value 1; nodes without a rack
are left out (the rules sum their hosts under ``portal_rack="none"``).
"""

from __future__ import annotations

from django.http import HttpResponse
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.views import APIView

from accounts.api.permissions import HasRequiredScope
from accounts.selectors.scoping import principal_sees_all
from inventory.models import Cluster, Node
from telemetry.read.promql.rack_rules import HOST_KEY, NODE_RACK_INFO, RACK_KEY


class TopologyCollector:
    """The placement of every node of ``clusters`` that has a rack."""

    def __init__(self, clusters: list[Cluster]) -> None:
        self.clusters = clusters

    def collect(self):
        info = GaugeMetricFamily(
            NODE_RACK_INFO,
            "The portal's placement of a node in a rack (always 1): join per-host series on "
            f"{HOST_KEY} to sum them per {RACK_KEY} (the portal's rack id)",
            labels=["cluster", HOST_KEY, RACK_KEY, "rack", "supernode"],
        )
        rows = (
            Node.objects.filter(cluster__in=self.clusters, rack__isnull=False)
            .order_by("cluster__name", "hostname")
            .values_list(
                "cluster__name", "hostname", "rack_id", "rack__name", "rack__supernode__name"
            )
        )
        for cluster, host, rack_id, rack, supernode in rows.iterator(chunk_size=5000):
            info.add_metric([cluster, host, str(rack_id), rack, supernode], 1)
        yield info


@extend_schema(exclude=True)  # Prometheus text, not part of the JSON API.
class TopologyMetricsView(APIView):
    """Scrape with an operator-level token with the ``read`` scope; ``?cluster=<name>``
    (repeatable) narrows it to those clusters."""

    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "read"

    def get(self, request: Request) -> HttpResponse:
        if not principal_sees_all(request.user):
            raise PermissionDenied(_("/metrics/topology describes every cluster: staff only."))
        names = request.query_params.getlist("cluster")
        clusters = list(Cluster.objects.filter(name__in=names) if names else Cluster.objects.all())
        unknown = sorted(set(names) - {c.name for c in clusters})
        if unknown:
            raise ValidationError({"cluster": _("unknown cluster: %s") % ", ".join(unknown)})
        registry = CollectorRegistry(auto_describe=False)
        registry.register(TopologyCollector(clusters))
        return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
