from django.contrib.auth import views as auth_views
from django.urls import path

from monitoring.views import alerts, exporters, pages

urlpatterns = [
    path("", pages.home, name="home"),
    path("status/", pages.status, name="status"),
    path("exporters/", exporters.exporter_list, name="exporters"),
    path("alerts/", alerts.alert_list, name="alerts"),
    path("alerts/<int:pk>/acknowledge/", alerts.alert_acknowledge_view, name="alert-acknowledge"),
    path("alerts/<int:pk>/resolve/", alerts.alert_resolve_view, name="alert-resolve"),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
]
