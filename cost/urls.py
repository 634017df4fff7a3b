from django.urls import path

from cost import views

urlpatterns = [
    path("cost/", views.cost_page, name="cost"),
]
