from django.urls import path

from scheduling import views, views_calendar

urlpatterns = [
    path("scheduler/", views.scheduler_page, name="scheduler"),
    path(
        "scheduler/sources/<int:pk>/sync/",
        views.scheduler_source_sync_view,
        name="scheduler-source-sync",
    ),
]

# The day/night window calendar (scheduling/views_calendar.py).
urlpatterns += [
    path("scheduler/calendars/", views_calendar.calendar_list_page, name="scheduler-calendars"),
    path("scheduler/calendars/<int:pk>/", views_calendar.calendar_page, name="scheduler-calendar"),
    path(
        "scheduler/calendars/<int:pk>/<str:command>/",
        views_calendar.calendar_command,
        name="scheduler-calendar-command",
    ),
]
