from django.urls import path

from telemetry import views

urlpatterns = [
    path("exporters/", views.exporter_list, name="exporters"),
]
