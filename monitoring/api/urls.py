from django.urls import path

from monitoring.api import views

app_name = "api"

urlpatterns = [
    path("me/", views.MeView.as_view(), name="me"),
    path("status/processes/", views.ProcessStatusView.as_view(), name="process-status"),
]
