"""Migration workflow API under /api/v1/ (paths start with plans/, migration-audit/,
traffic-routers/ or router-callbacks/)."""

from django.urls import path

from cluster_portal.web.commands import command_routes
from rollout.api import routers, serializers, views

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
    path("plans/<int:pk>/override/", views.PlanOverrideView.as_view(), name="plan-override"),
    # One route per command (same URLs, same name: reverse with ``pk`` and ``command`` still
    # works), each its own OpenAPI operation ``plans_<command>``.
    *command_routes(
        prefix="plans",
        view=views.PlanCommandView,
        commands=views.PLAN_COMMANDS,
        keyword="command",
        operation_prefix="plans",
        route_name="plan-command",
        schema=lambda command: {
            "description": (
                f"``POST /api/v1/plans/<id>/{command}/``; answers the plan as it is afterwards."
            ),
            "request": serializers.CommandSerializer,
            "responses": {200: serializers.PlanSerializer},
        },
    ),
    path("plans/<int:pk>/router/", views.RouterChoiceView.as_view(), name="plan-router"),
    path(
        "plans/<int:pk>/router-calls/", views.RouterCallListView.as_view(), name="plan-router-calls"
    ),
    path("traffic-routers/", routers.TrafficRouterListView.as_view(), name="traffic-routers"),
    path(
        "traffic-routers/<int:pk>/",
        routers.TrafficRouterDetailView.as_view(),
        name="traffic-router",
    ),
    path(
        "router-callbacks/<int:router_id>/",
        views.RouterCallbackView.as_view(),
        name="router-callback",
    ),
    path("migration-audit/", views.AuditListView.as_view(), name="audit"),
]
