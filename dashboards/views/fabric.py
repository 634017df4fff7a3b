"""The network page's fabric graph: the supernode picked by ``?supernode=`` (or the one with
the most links not up), its figure for ``static/js/fabric.js``, or a 400 naming a bad pick."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _

from dashboards.payloads.fabric import fabric_figure
from dashboards.selectors.fabric import UnknownSupernode, fabric_graph
from inventory.models import Cluster


def fabric_context(request: HttpRequest, cluster: Cluster) -> dict | HttpResponse:
    """``fabric`` (the graph) and ``fabric_figure`` for the template, or the 400 page."""
    picked = request.GET.get("supernode") or None
    try:
        graph = fabric_graph(cluster, picked)
    except UnknownSupernode:
        message = _("Cluster %(cluster)s has no supernode named “%(name)s”.") % {
            "cluster": cluster.name,
            "name": picked,
        }
        return render(
            request,
            "dashboards/bad_supernode.html",
            {"errors": {"supernode": message}, "cluster": cluster},
            status=400,
        )
    return {"fabric": graph, "fabric_figure": fabric_figure(graph) if graph.edges else None}
