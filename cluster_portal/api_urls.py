"""Every REST endpoint under ``/api/v1/``, one ``api`` namespace, each app's routes in its own
``api/urls.py``."""

from django.urls import include, path

app_name = "api"

urlpatterns = [
    path("", include("accounts.api.urls")),
    path("", include("inventory.api.urls")),
    path("", include("telemetry.api.urls")),
    path("", include("scheduling.api.urls")),
    path("", include("alerts.api.urls")),
    path("", include("cost.api.urls")),
    path("", include("dashboards.api.urls")),
]
