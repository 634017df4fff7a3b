from django.contrib.auth import views as auth_views
from django.urls import path

from monitoring.views import alerts, dashboards, exporters, pages
from monitoring.views import cost as cost_views
from monitoring.views import report as report_views

urlpatterns = [
    path("", pages.home, name="home"),
    path("status/", pages.status, name="status"),
    path("exporters/", exporters.exporter_list, name="exporters"),
    path("alerts/", alerts.alert_list, name="alerts"),
    path("alerts/<int:pk>/acknowledge/", alerts.alert_acknowledge_view, name="alert-acknowledge"),
    path("alerts/<int:pk>/resolve/", alerts.alert_resolve_view, name="alert-resolve"),
    path("cost/", cost_views.cost_page, name="cost"),
    path("report/", report_views.validation_report, name="validation-report"),
    path("dashboards/", dashboards.overview_page, name="dashboard-overview"),
    path("dashboards/hardware/", dashboards.hardware_page, name="dashboard-hardware"),
    path("dashboards/hardware/racks/<int:pk>/", dashboards.rack_page, name="dashboard-rack"),
    path("dashboards/hardware/nodes/<int:pk>/", dashboards.node_page, name="dashboard-node"),
    path(
        "dashboards/hardware/accelerators/<int:pk>/",
        dashboards.accelerator_page,
        name="dashboard-accelerator",
    ),
    path("dashboards/memory/", dashboards.memory_page, name="dashboard-memory"),
    path("dashboards/network/", dashboards.network_page, name="dashboard-network"),
    path("workloads/", dashboards.workload_list_page, name="workloads"),
    path("workloads/<int:pk>/", dashboards.workload_detail_page, name="workload-detail"),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
]
