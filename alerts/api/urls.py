from django.urls import path, re_path

from alerts.api import views

urlpatterns = [
    path("alerts/", views.AlertListView.as_view(), name="alerts"),
    path("alerts/<int:pk>/", views.AlertDetailView.as_view(), name="alert"),
    re_path(
        r"^alerts/(?P<pk>\d+)/(?P<command>acknowledge|resolve)/$",
        views.AlertCommandView.as_view(),
        name="alert-command",
    ),
]
