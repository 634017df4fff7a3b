from django.contrib.auth import views as auth_views
from django.urls import path

from monitoring.views import exporters, pages

urlpatterns = [
    path("", pages.home, name="home"),
    path("status/", pages.status, name="status"),
    path("exporters/", exporters.exporter_list, name="exporters"),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
]
