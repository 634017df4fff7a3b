"""What-if pages, mounted at /whatif/ (the twin's own URLs live under /twin/)."""

from django.urls import path

from simulation import calendar_whatif_views, catalog_views, whatif_views

urlpatterns = [
    path("", whatif_views.whatif_page, name="whatif"),
    path("<int:pk>/", whatif_views.whatif_detail, name="whatif-detail"),
    path("models/", catalog_views.models_page, name="catalog-models"),
    path(
        "calendar-revisions/<int:pk>/",
        calendar_whatif_views.calendar_whatif_queue,
        name="calendar-whatif",
    ),
]
