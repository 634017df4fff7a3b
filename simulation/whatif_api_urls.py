"""Simulation API, mounted at /api/v1/: what-if runs and twin runs."""

from django.urls import path

from cluster_portal.web.commands import command_routes
from simulation import twin_api, whatif_api

urlpatterns = [
    path("whatif/", whatif_api.WhatIfListView.as_view(), name="api-whatif"),
    path("whatif/<int:pk>/", whatif_api.WhatIfDetailView.as_view(), name="api-whatif-detail"),
    path("twin/runs/", twin_api.TwinRunListView.as_view(), name="api-twin-runs"),
    # One route per action (same URLs, same name: reverse with ``pk`` and ``action`` still
    # works), each its own OpenAPI operation ``twin_runs_<action>``.
    *command_routes(
        prefix="twin/runs",
        view=twin_api.TwinRunActionView,
        commands=twin_api.TWIN_ACTIONS,
        keyword="action",
        operation_prefix="twin_runs",
        route_name="api-twin-action",
        # Only ``speed`` reads a body.
        schema=lambda action: {
            "request": twin_api.TwinActionSerializer if action == "speed" else None,
            "responses": {200: twin_api.TwinRunSerializer},
        },
    ),
]
