from django.urls import path

from cost import scheduler_showback_views, views

urlpatterns = [
    path("cost/", views.cost_page, name="cost"),
    path(
        "scheduler/showback/",
        scheduler_showback_views.scheduler_showback_page,
        name="scheduler-showback",
    ),
]
