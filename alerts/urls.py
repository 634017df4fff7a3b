from django.urls import path

from alerts import views

urlpatterns = [
    path("alerts/", views.alert_list, name="alerts"),
    path("alerts/<int:pk>/acknowledge/", views.alert_acknowledge_view, name="alert-acknowledge"),
    path("alerts/<int:pk>/resolve/", views.alert_resolve_view, name="alert-resolve"),
]
