from django.urls import path, re_path

from monitoring.api import alerts, dashboards, inventory, readings, telemetry, views
from monitoring.api import cost as cost_api
from monitoring.api import report as report_api
from monitoring.api import tokens as tokens_api

app_name = "api"

urlpatterns = [
    path("me/", views.MeView.as_view(), name="me"),
    path("status/processes/", views.ProcessStatusView.as_view(), name="process-status"),
    path("tokens/", tokens_api.TokenListView.as_view(), name="tokens"),
    path("tokens/<int:pk>/", tokens_api.TokenDetailView.as_view(), name="token"),
    path("tokens/<int:pk>/rotate/", tokens_api.TokenRotateView.as_view(), name="token-rotate"),
    path("tokens/<int:pk>/revoke/", tokens_api.TokenRevokeView.as_view(), name="token-revoke"),
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
    path("alerts/<int:pk>/", alerts.AlertDetailView.as_view(), name="alert"),
    re_path(
        r"^alerts/(?P<pk>\d+)/(?P<command>acknowledge|resolve)/$",
        alerts.AlertCommandView.as_view(),
        name="alert-command",
    ),
    path("clusters/", inventory.ClusterListView.as_view(), name="clusters"),
    path("workloads/", inventory.WorkloadListView.as_view(), name="workloads"),
    path("workloads/<int:pk>/", inventory.WorkloadDetailView.as_view(), name="workload"),
    path("exporters/", inventory.ExporterTargetListView.as_view(), name="exporters"),
    path(
        "dashboards/overview/",
        dashboards.OverviewDataView.as_view(),
        name="dashboard-overview",
    ),
    path(
        "dashboards/hardware/",
        dashboards.HardwareDataView.as_view(),
        name="dashboard-hardware",
    ),
    path(
        "dashboards/hardware/racks/<int:pk>/",
        dashboards.RackDataView.as_view(),
        name="dashboard-rack",
    ),
    path(
        "dashboards/hardware/nodes/<int:pk>/",
        dashboards.NodeDataView.as_view(),
        name="dashboard-node",
    ),
    path(
        "dashboards/hardware/accelerators/<int:pk>/",
        dashboards.AcceleratorDataView.as_view(),
        name="dashboard-accelerator",
    ),
    path("dashboards/memory/", dashboards.MemoryDataView.as_view(), name="dashboard-memory"),
    path("dashboards/network/", dashboards.NetworkDataView.as_view(), name="dashboard-network"),
    path(
        "dashboards/workloads/",
        dashboards.WorkloadListDataView.as_view(),
        name="dashboard-workloads",
    ),
    path(
        "dashboards/workloads/<int:pk>/",
        dashboards.WorkloadDetailDataView.as_view(),
        name="dashboard-workload",
    ),
    path("cost/clusters/", cost_api.ClusterCostView.as_view(), name="cost-clusters"),
    path("cost/comparison/", cost_api.CostComparisonView.as_view(), name="cost-comparison"),
    path("cost/showback/", cost_api.ShowbackView.as_view(), name="cost-showback"),
    path("report/", report_api.ReportView.as_view(), name="validation-report"),
]
