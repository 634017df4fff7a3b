from django.urls import path

from simulation import views

urlpatterns = [
    path("", views.twin_runs, name="twin"),
    path("new/", views.twin_run_new, name="twin-new"),
    path("<int:pk>/<slug:action>/", views.twin_run_action, name="twin-action"),
]
