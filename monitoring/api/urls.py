from django.urls import path

from monitoring.api import alerts, readings, telemetry, views

app_name = "api"

urlpatterns = [
    path("me/", views.MeView.as_view(), name="me"),
    path("status/processes/", views.ProcessStatusView.as_view(), name="process-status"),
    path("telemetry/samples/", telemetry.SampleBatchView.as_view(), name="telemetry-samples"),
    path(
        "telemetry/prometheus/",
        telemetry.PrometheusIngestView.as_view(),
        name="telemetry-prometheus",
    ),
    path("metrics/", telemetry.MetricCatalogueView.as_view(), name="metric-catalogue"),
    path("telemetry/series/", readings.SeriesView.as_view(), name="telemetry-series"),
    path("accelerators/", readings.AcceleratorListView.as_view(), name="accelerators"),
    path("alerts/", alerts.AlertListView.as_view(), name="alerts"),
]
