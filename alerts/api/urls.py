from django.urls import path, re_path

from alerts.api import views

urlpatterns = [
    path("alerts/", views.AlertListView.as_view(), name="alerts"),
    path("alerts/<int:pk>/", views.AlertDetailView.as_view(), name="alert"),
    # One route per command (same URLs, same name: reverse with ``pk`` and ``command`` still
    # works), each its own OpenAPI operation ``alerts_<command>``.
    *(
        re_path(
            rf"^alerts/(?P<pk>\d+)/{command}/$",
            views.alert_command_view(command),
            {"command": command},
            name="alert-command",
        )
        for command in views.ALERT_COMMANDS
    ),
]
