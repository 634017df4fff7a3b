"""Twin runs over the REST API (staff): ``GET /api/v1/twin/runs/``, ``POST /api/v1/twin/runs/``
(operators: a new, sandboxed run) and the control commands
``POST /api/v1/twin/runs/<id>/<start|pause|reset|speed>/`` the /twin/ page's buttons send."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.generics import ListAPIView
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.permissions import HasRequiredScope
from accounts.selectors.scoping import principal_sees_all
from cluster_portal.web.errors import form_validation_error
from simulation.forms import TwinRunCreateForm, TwinRunSpeedForm
from simulation.models import TwinRun
from simulation.services.runs import twin_run_control, twin_run_new

TWIN_ACTIONS = ("start", "pause", "reset", "speed")


class TwinRunSerializer(serializers.ModelSerializer):
    cluster = serializers.CharField(source="cluster.name", read_only=True)

    class Meta:
        model = TwinRun
        fields = ["id", "name", "cluster", "status", "steps_per_tick", "tick_seq",
                  "pool_seq", "sim_time", "last_tick_at", "last_tick_ms", "last_pool_tick_at",
                  "created_at"]  # fmt: skip
        read_only_fields = fields


class TwinRunCreateSerializer(serializers.Serializer):
    """The /twin/ page's form; validation is the form's (and the engine's)."""

    name = serializers.SlugField(max_length=60)
    cards = serializers.IntegerField(default=2048)
    hardware = serializers.CharField(default="ascend-950dt")
    policy = serializers.ChoiceField(choices=["unified", "split"], default="unified")
    seed = serializers.IntegerField(default=7)
    tenant = serializers.SlugField(
        required=False,
        allow_blank=True,
        help_text="A real tenant's slug for the run's workloads, on purpose; empty: the "
        "sandbox tenant (no customer sees or pays for a test run).",
    )
    default_for_pages = serializers.BooleanField(
        default=False, help_text="Make this run's cluster the default of the pages."
    )


class TwinActionSerializer(serializers.Serializer):
    steps_per_tick = serializers.IntegerField(
        required=False, min_value=1, max_value=60, help_text="speed only: minutes per tick"
    )


class _Staff:
    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "read"

    def initial(self, request: Request, *args, **kwargs) -> None:
        super().initial(request, *args, **kwargs)
        if not principal_sees_all(request.user):
            raise PermissionDenied(_("Twin runs are visible to cluster staff only."))


class TwinRunListView(_Staff, ListAPIView):
    """Every twin run with its tick counters; ``?status=running|paused``. ``POST`` (operators)
    creates a run on a new cluster: sandboxed — its workloads in the sandbox tenant unless
    ``tenant`` names a real one, and no page's default unless ``default_for_pages``."""

    serializer_class = TwinRunSerializer
    filterset_fields = ["status"]
    queryset = TwinRun.objects.select_related("cluster").defer("state", "scenario").order_by("name")

    @extend_schema(
        operation_id="twin_runs_new",
        request=TwinRunCreateSerializer,
        responses={201: TwinRunSerializer},
    )
    def post(self, request: Request) -> Response:
        if not request.user.has_perm("monitoring.operate_cluster"):
            raise PermissionDenied(_("Controlling the twin needs the operator role."))
        payload = TwinRunCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        form = TwinRunCreateForm(data={**payload.validated_data})
        if not form.is_valid():
            raise form_validation_error(form)
        data = form.cleaned_data
        run = twin_run_new(
            name=data["name"],
            policy=data["policy"],
            scenario=data["scenario"],
            description=_("Simulated by the digital twin"),
            tenant=data["tenant"],
            default_for_pages=data["default_for_pages"],
        )
        return Response(TwinRunSerializer(run).data, status=status.HTTP_201_CREATED)


@extend_schema(request=TwinActionSerializer, responses={200: TwinRunSerializer})
class TwinRunActionView(_Staff, APIView):
    """Start, pause, reset or change the speed of a run (operators)."""

    # Routed once per action (``command_routes`` in whatif_api_urls.py): each its own operation.

    def post(self, request: Request, pk: int, action: str) -> Response:
        run = get_object_or_404(TwinRun, pk=pk)
        if not request.user.has_perm("monitoring.operate_cluster"):
            raise PermissionDenied(_("Controlling the twin needs the operator role."))
        steps = None
        if action == "speed":
            form = TwinRunSpeedForm(data=request.data)
            if not form.is_valid():
                raise form_validation_error(form)
            steps = form.cleaned_data["steps_per_tick"]
        run = twin_run_control(run_id=run.pk, action=action, steps_per_tick=steps)
        return Response(TwinRunSerializer(run).data)
