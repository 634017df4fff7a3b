from django.urls import path

from alerts.api import views
from cluster_portal.web.commands import command_routes

urlpatterns = [
    path("alerts/", views.AlertListView.as_view(), name="alerts"),
    path("alerts/<int:pk>/", views.AlertDetailView.as_view(), name="alert"),
    # One route per command (same URLs, same name: reverse with ``pk`` and ``command`` still
    # works), each its own OpenAPI operation ``alerts_<command>``.
    *command_routes(
        prefix="alerts",
        view=views.AlertCommandView,
        commands=views.ALERT_COMMANDS,
        keyword="command",
        operation_prefix="alerts",
        route_name="alert-command",
        schema=lambda command: {"request": None, "responses": {200: views.AlertSerializer}},
    ),
]
