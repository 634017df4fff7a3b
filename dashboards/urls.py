from django.urls import path

from dashboards.views import attribution, dashboards, pages, serving
from dashboards.views import report as report_views

urlpatterns = [
    path("", pages.home, name="home"),
    path("status/", pages.status, name="status"),
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
    path(
        "workloads/<int:pk>/series-selector/",
        attribution.workload_selector_save,
        name="workload-series-selector",
    ),
    path(
        "workloads/<int:pk>/serving-bindings/",
        serving.serving_binding_add,
        name="workload-serving-binding-add",
    ),
    path(
        "workloads/<int:pk>/serving-bindings/<int:binding_pk>/delete/",
        serving.serving_binding_remove,
        name="workload-serving-binding-delete",
    ),
]
