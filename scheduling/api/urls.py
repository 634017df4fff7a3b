from django.urls import path

from cluster_portal.web.commands import command_routes
from scheduling.api import calendar, views

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

# The day/night window calendar (scheduling/api/calendar.py): one route per command.
urlpatterns += [
    path("scheduler-calendars/", calendar.CalendarListView.as_view(), name="scheduler-calendars"),
    path(
        "scheduler-calendars/<int:pk>/",
        calendar.CalendarDetailView.as_view(),
        name="scheduler-calendar",
    ),
    *command_routes(
        prefix="scheduler-calendars",
        view=calendar.CalendarCommandView,
        commands=calendar.COMMANDS,
        keyword="command",
        operation_prefix="calendar",
        route_name="scheduler-calendar-command",
        schema=calendar.command_schema,
    ),
]
