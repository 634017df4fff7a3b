from django.urls import path

from scheduling import views

urlpatterns = [
    path("scheduler/", views.scheduler_page, name="scheduler"),
    path(
        "scheduler/sources/<int:pk>/sync/",
        views.scheduler_source_sync_view,
        name="scheduler-source-sync",
    ),
]
