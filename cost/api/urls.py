from django.urls import path

from cost import scheduler_showback_views
from cost.api import views

urlpatterns = [
    path("cost/clusters/", views.ClusterCostView.as_view(), name="cost-clusters"),
    path("cost/comparison/", views.CostComparisonView.as_view(), name="cost-comparison"),
    path("cost/showback/", views.ShowbackView.as_view(), name="cost-showback"),
    path(
        "scheduler/showback/",
        scheduler_showback_views.SchedulerShowbackView.as_view(),
        name="scheduler-showback",
    ),
]
