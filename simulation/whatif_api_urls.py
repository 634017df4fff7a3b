"""Simulation API, mounted at /api/v1/: what-if runs and twin runs."""

from django.urls import path, re_path

from simulation import twin_api, whatif_api

urlpatterns = [
    path("whatif/", whatif_api.WhatIfListView.as_view(), name="api-whatif"),
    path("whatif/<int:pk>/", whatif_api.WhatIfDetailView.as_view(), name="api-whatif-detail"),
    path("twin/runs/", twin_api.TwinRunListView.as_view(), name="api-twin-runs"),
    re_path(
        r"^twin/runs/(?P<pk>\d+)/(?P<action>start|pause|reset|speed)/$",
        twin_api.TwinRunActionView.as_view(),
        name="api-twin-action",
    ),
]
