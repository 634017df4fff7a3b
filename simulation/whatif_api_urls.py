"""Simulation API, mounted at /api/v1/: what-if runs and twin runs."""

from django.urls import path, re_path

from simulation import twin_api, whatif_api

urlpatterns = [
    path("whatif/", whatif_api.WhatIfListView.as_view(), name="api-whatif"),
    path("whatif/<int:pk>/", whatif_api.WhatIfDetailView.as_view(), name="api-whatif-detail"),
    path("twin/runs/", twin_api.TwinRunListView.as_view(), name="api-twin-runs"),
    # One route per action (same URLs, same name: reverse with ``pk`` and ``action`` still
    # works), each its own OpenAPI operation ``twin_runs_<action>``.
    *(
        re_path(
            rf"^twin/runs/(?P<pk>\d+)/{action}/$",
            twin_api.twin_run_action_view(action),
            {"action": action},
            name="api-twin-action",
        )
        for action in twin_api.TWIN_ACTIONS
    ),
]
