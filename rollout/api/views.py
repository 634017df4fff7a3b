"""REST API of the migration workflow: tenant-scoped reads and POST commands.

A customer (or tenant-bound token) gets 404 for another tenant's plan, on reads and
commands alike. Commands answer 409 on an illegal or conflicting transition and 403 on a
missing permission or a four-eyes violation.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.generics import ListAPIView, RetrieveAPIView
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.permissions import HasRequiredScope
from rollout.api import serializers as s
from rollout.api.filters import AnalysisRunFilter, AuditFilter, PlanFilter
from rollout.models import AnalysisRun, Approval, Gate, Phase, RouterCall, TrafficRouter
from rollout.selectors import audit_visible_to, plans_visible_to
from rollout.services.audit import Actor
from rollout.services.authoring import plan_author
from rollout.services.commands import COMMAND_NAMES, plan_command
from rollout.services.errors import FourEyesViolation, NotPermitted, WorkflowConflict
from rollout.services.router_callbacks import CallbackRejected, router_callback
from rollout.services.routing import router_choose


class _Read:
    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "read"

    def plan(self):
        return get_object_or_404(plans_visible_to(self.request.user), pk=self.kwargs["pk"])

    @property
    def describing_schema(self) -> bool:
        """drf-spectacular calls get_queryset without a request's URL arguments."""
        return getattr(self, "swagger_fake_view", False)


class PlanListView(_Read, ListAPIView):
    """Plans the caller may see; filter by ``state``, ``tenant``, ``target_cluster``.

    ``POST`` (operators) authors a draft plan: workloads, steps, approvals and gate criteria
    (the templates unless ``criteria`` is given); 400 names the field, 403 without the
    operate permission.
    """

    serializer_class = s.PlanSerializer
    filterset_class = PlanFilter

    def get_queryset(self):
        return plans_visible_to(self.request.user)

    @extend_schema(
        operation_id="plans_author",
        request=s.PlanAuthorSerializer,
        responses={201: s.PlanDetailSerializer},
    )
    def post(self, request) -> Response:
        actor = Actor.from_request(request)
        if not actor.can_operate():
            return Response(
                {
                    "detail": "creating a migration plan needs the operate permission",
                    "code": "permission_denied",
                },
                status=status.HTTP_403_FORBIDDEN,
            )
        body = s.PlanAuthorSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        try:
            plan = plan_author(actor=actor, **data)
        except DjangoValidationError as exc:
            detail = exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages}
            raise ValidationError(detail) from exc
        return Response(s.PlanDetailSerializer(plan).data, status=status.HTTP_201_CREATED)


class PlanDetailView(_Read, RetrieveAPIView):
    serializer_class = s.PlanDetailSerializer

    def get_object(self):
        return self.plan()


class PhaseListView(_Read, ListAPIView):
    serializer_class = s.PhaseSerializer
    pagination_class = None

    def get_queryset(self):
        if self.describing_schema:
            return Phase.objects.none()
        return self.plan().phases.all()


class GateListView(_Read, ListAPIView):
    serializer_class = s.GateSerializer

    def get_queryset(self):
        if self.describing_schema:
            return Gate.objects.none()
        return Gate.objects.filter(plan=self.plan()).select_related("phase", "plan")


class AnalysisRunListView(_Read, ListAPIView):
    """Runs with every metric and measurement; ``?gate=`` narrows to one gate."""

    serializer_class = s.AnalysisRunSerializer
    filterset_class = AnalysisRunFilter

    def get_queryset(self):
        if self.describing_schema:
            return AnalysisRun.objects.none()
        return AnalysisRun.objects.filter(gate__plan=self.plan()).prefetch_related(
            "metrics__measurements"
        )


class ApprovalListView(_Read, ListAPIView):
    serializer_class = s.ApprovalSerializer

    def get_queryset(self):
        if self.describing_schema:
            return Approval.objects.none()
        return Approval.objects.filter(gate__plan=self.plan())


class AuditListView(_Read, ListAPIView):
    """Audit rows, newest first; ``?plan=&action=&actor=`` filter. Read-only by design."""

    serializer_class = s.AuditEntrySerializer
    filterset_class = AuditFilter

    def get_queryset(self):
        entries = audit_visible_to(self.request.user)
        if "pk" in self.kwargs:
            entries = entries.filter(plan=self.plan())
        return entries


@extend_schema(request=s.CommandSerializer, responses={200: s.PlanSerializer})
class PlanCommandView(APIView):
    """``POST /api/v1/plans/<id>/<command>/``; answers the plan as it is afterwards."""

    # Routed once per command (``command_routes`` in urls.py): each its own OpenAPI operation.

    # No scope gate here: another tenant's plan is a 404 first, then the one service decides
    # (the person's permission and, through a token, its scope) and audits every refusal
    # as ``<command>_denied`` — a read token's attempt to approve leaves its trace too.
    permission_classes = [IsAuthenticated]
    throttle_scope = "approve"
    body_serializer = s.CommandSerializer

    def post(self, request, pk: int, command: str) -> Response:
        plan = get_object_or_404(plans_visible_to(request.user), pk=pk)
        body = self.body_serializer(data=request.data, context={"command": command})
        body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            plan = plan_command(
                command=command,
                plan_id=plan.pk,
                actor=Actor.from_request(request),
                reason=data["reason"],
                comment=data["comment"],
                revision=data.get("revision"),
                expected_version=data.get("expected_version"),
            )
        except (FourEyesViolation, NotPermitted) as exc:
            return Response(
                {"detail": str(exc), "code": "permission_denied"}, status=status.HTTP_403_FORBIDDEN
            )
        except WorkflowConflict as exc:
            return Response(
                {"detail": str(exc), "code": "conflict"}, status=status.HTTP_409_CONFLICT
            )
        plan.refresh_from_db()
        return Response(s.PlanSerializer(plan).data)


#: The commands routed to ``PlanCommandView``; override has its own view (a different body).
PLAN_COMMANDS = tuple(name for name in COMMAND_NAMES if name != "override")


class PlanOverrideView(PlanCommandView):
    """``POST /api/v1/plans/<id>/override/``: request promotion past an Inconclusive or Failed
    analysis — a reason and the gate revision required; its approvals are marked override."""

    body_serializer = s.OverrideSerializer

    @extend_schema(
        operation_id="plans_override",
        request=s.OverrideSerializer,
        responses={200: s.PlanSerializer},
    )
    def post(self, request, pk: int, command: str = "override") -> Response:
        return super().post(request, pk, "override")


class RouterCallListView(_Read, ListAPIView):
    """Every call the plan made to its traffic routers: share asked, share read back, answer."""

    serializer_class = s.RouterCallSerializer

    def get_queryset(self):
        if self.describing_schema:
            return RouterCall.objects.none()
        return self.plan().router_calls.select_related("plan_workload__workload")


@extend_schema(request=s.RouterChoiceSerializer, responses={200: s.PlanDetailSerializer})
class RouterChoiceView(APIView):
    """``POST /api/v1/plans/<id>/router/``: the plan's router, or one workload's (operators;
    while the plan is a draft, paused or rolled back). 400 names an unknown router."""

    permission_classes = [IsAuthenticated]

    def post(self, request, pk: int) -> Response:
        plan = get_object_or_404(plans_visible_to(request.user), pk=pk)
        body = s.RouterChoiceSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            plan = router_choose(
                plan_id=plan.pk,
                router=data["router"],
                workload_id=data.get("workload"),
                actor=Actor.from_request(request),
                expected_version=data.get("expected_version"),
            )
        except NotPermitted as exc:
            return Response(
                {"detail": str(exc), "code": "permission_denied"}, status=status.HTTP_403_FORBIDDEN
            )
        except WorkflowConflict as exc:
            return Response(
                {"detail": str(exc), "code": "conflict"}, status=status.HTTP_409_CONFLICT
            )
        plan.refresh_from_db()
        return Response(s.PlanDetailSerializer(plan).data)


@extend_schema(request=None, responses={200: s.RouterCallSerializer})
class RouterCallbackView(APIView):
    """``POST /api/v1/router-callbacks/<router id>/``: a deploy tool confirms (or refuses) a
    share it answered 202 to. Authenticated by its HMAC signature, not a session or token."""

    authentication_classes: list = []
    permission_classes: list = []

    def post(self, request, router_id: int) -> Response:
        router = get_object_or_404(TrafficRouter, pk=router_id)
        try:
            call = router_callback(router=router, body=request.body, headers=request.headers)
        except CallbackRejected as exc:
            return Response({"detail": str(exc), "code": "rejected"}, status=exc.status)
        return Response(s.RouterCallSerializer(call).data)
