"""Migration workflow API under /api/v1/ (paths start with plans/ or migration-audit/)."""

from django.urls import path, re_path

from rollout.api import views

app_name = "rollout-api"

urlpatterns = [
    path("plans/", views.PlanListView.as_view(), name="plans"),
    path("plans/<int:pk>/", views.PlanDetailView.as_view(), name="plan"),
    path("plans/<int:pk>/phases/", views.PhaseListView.as_view(), name="plan-phases"),
    path("plans/<int:pk>/gates/", views.GateListView.as_view(), name="plan-gates"),
    path(
        "plans/<int:pk>/analysis-runs/",
        views.AnalysisRunListView.as_view(),
        name="plan-analysis-runs",
    ),
    path("plans/<int:pk>/approvals/", views.ApprovalListView.as_view(), name="plan-approvals"),
    path("plans/<int:pk>/audit/", views.AuditListView.as_view(), name="plan-audit"),
    re_path(
        r"^plans/(?P<pk>\d+)/(?P<command>start|promote|approve|reject|pause|resume|abort|retry"
        r"|force-promote|skip)/$",
        views.PlanCommandView.as_view(),
        name="plan-command",
    ),
    path("migration-audit/", views.AuditListView.as_view(), name="audit"),
]
