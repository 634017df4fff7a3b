from django.urls import path, re_path

from rollout import views, views_criteria

urlpatterns = [
    path("", views.plan_list, name="migrations"),
    path("new/", views.plan_new, name="migration-new"),
    path("audit/", views.audit_list, name="migration-audit"),
    path("webhooks/", views.webhook_deliveries, name="migration-webhooks"),
    path("<int:pk>/", views.plan_detail, name="migration-plan"),
    path("<int:pk>/router/", views.plan_router, name="migration-router"),
    path("<int:pk>/criteria/new/", views_criteria.criterion_create, name="migration-criterion-new"),
    path(
        "<int:pk>/criteria/<int:criterion_id>/",
        views_criteria.criterion_change,
        name="migration-criterion",
    ),
    path(
        "<int:pk>/criteria/<int:criterion_id>/delete/",
        views_criteria.criterion_remove,
        name="migration-criterion-delete",
    ),
    re_path(
        r"^(?P<pk>\d+)/(?P<command>start|promote|approve|reject|pause|resume|abort|retry"
        r"|force-promote|override|skip|verify-rollback)/$",
        views.plan_command,
        name="migration-command",
    ),
]
