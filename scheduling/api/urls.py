from django.urls import path

from scheduling.api import views

urlpatterns = [
    path(
        "scheduler-sources/",
        views.SchedulerSourceListView.as_view(),
        name="scheduler-sources",
    ),
    path(
        "scheduler-sources/<int:pk>/",
        views.SchedulerSourceDetailView.as_view(),
        name="scheduler-source",
    ),
    path(
        "scheduler-sources/<int:pk>/sync/",
        views.SchedulerSourceSyncView.as_view(),
        name="scheduler-source-sync",
    ),
    path("scheduler-jobs/", views.SchedulerJobListView.as_view(), name="scheduler-jobs"),
    path("scheduler/queues/", views.SchedulerQueuesView.as_view(), name="scheduler-queues"),
    path("scheduler-idle/", views.SchedulerIdleView.as_view(), name="scheduler-idle"),
]
