"""What-if API, mounted at /api/v1/whatif/."""

from django.urls import path

from simulation import whatif_api

urlpatterns = [
    path("", whatif_api.WhatIfListView.as_view(), name="api-whatif"),
    path("<int:pk>/", whatif_api.WhatIfDetailView.as_view(), name="api-whatif-detail"),
]
