from django.urls import path

from inventory.api import views

urlpatterns = [
    path("clusters/", views.ClusterListView.as_view(), name="clusters"),
    path(
        "clusters/<slug:name>/inventory-import/",
        views.InventoryImportView.as_view(),
        name="inventory-import",
    ),
    path("workloads/", views.WorkloadListView.as_view(), name="workloads"),
    path("workloads/<int:pk>/", views.WorkloadDetailView.as_view(), name="workload"),
    path(
        "workloads/<int:pk>/series-selector/",
        views.WorkloadSelectorView.as_view(),
        name="workload-series-selector",
    ),
]
