from django.urls import path

from inventory import views

urlpatterns = [
    path("import/", views.inventory_import_page, name="inventory-import"),
]
