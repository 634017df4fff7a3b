from django.urls import path

from dashboards.api import report, views

urlpatterns = [
    path(
        "dashboards/overview/",
        views.OverviewDataView.as_view(),
        name="dashboard-overview",
    ),
    path(
        "dashboards/hardware/",
        views.HardwareDataView.as_view(),
        name="dashboard-hardware",
    ),
    path(
        "dashboards/hardware/racks/<int:pk>/",
        views.RackDataView.as_view(),
        name="dashboard-rack",
    ),
    path(
        "dashboards/hardware/nodes/<int:pk>/",
        views.NodeDataView.as_view(),
        name="dashboard-node",
    ),
    path(
        "dashboards/hardware/accelerators/<int:pk>/",
        views.AcceleratorDataView.as_view(),
        name="dashboard-accelerator",
    ),
    path("dashboards/memory/", views.MemoryDataView.as_view(), name="dashboard-memory"),
    path("dashboards/network/", views.NetworkDataView.as_view(), name="dashboard-network"),
    path(
        "dashboards/workloads/",
        views.WorkloadListDataView.as_view(),
        name="dashboard-workloads",
    ),
    path(
        "dashboards/workloads/<int:pk>/",
        views.WorkloadDetailDataView.as_view(),
        name="dashboard-workload",
    ),
    path("report/", report.ReportView.as_view(), name="validation-report"),
]
