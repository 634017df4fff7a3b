"""Read API over alerts: ``GET /api/v1/alerts/?state=&severity=``, paginated and scoped."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.generics import ListAPIView, RetrieveAPIView
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.permissions import HasRequiredScope
from accounts.api.scoping import TenantScopedMixin
from accounts.selectors.people import person_shown
from alerts.models import Alert
from alerts.selectors import (
    SEVERITY_FILTERS,
    STATE_FILTERS,
    alerts_for_triage,
    alerts_visible_to,
)
from alerts.services import AlertTransitionError, alert_acknowledge, alert_resolve


class AlertSerializer(serializers.ModelSerializer):
    rule = serializers.CharField(source="rule.name")
    title = serializers.CharField(source="rule.title")
    metric = serializers.CharField(source="rule.metric")
    comparator = serializers.CharField(source="rule.comparator")
    threshold = serializers.FloatField(source="rule.threshold")
    runbook = serializers.CharField(source="rule.runbook")
    cluster = serializers.CharField(source="entity.cluster.name")
    entity_kind = serializers.CharField(source="entity.kind")
    entity = serializers.CharField(source="entity.key")
    tenant = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)
    # Staff see the username; customers (and tenant tokens) the role ("operator"), never a
    # staff identity (accounts/selectors/people.py).
    acknowledged_by = serializers.SerializerMethodField()
    resolved_by = serializers.SerializerMethodField()

    class Meta:
        model = Alert
        fields = [
            "id",
            "rule",
            "title",
            "severity",
            "state",
            "cluster",
            "entity_kind",
            "entity",
            "tenant",
            "metric",
            "value",
            "comparator",
            "threshold",
            "message",
            "runbook",
            "first_seen",
            "last_seen",
            "acknowledged_by",
            "acknowledged_at",
            "resolved_by",
            "resolved_at",
        ]

    def _person(self, user) -> str | None:
        if user is None:
            return None
        request = self.context.get("request")
        return person_shown(getattr(request, "user", None), user)

    def get_acknowledged_by(self, alert: Alert) -> str | None:
        return self._person(alert.acknowledged_by)

    def get_resolved_by(self, alert: Alert) -> str | None:
        return self._person(alert.resolved_by)


@extend_schema(
    parameters=[
        OpenApiParameter("state", str, enum=list(STATE_FILTERS)),
        OpenApiParameter("severity", str, enum=list(SEVERITY_FILTERS)),
    ]
)
class AlertListView(ListAPIView):
    """Alerts, open ones first. Staff and operator-level tokens see all; customers and
    tenant-bound tokens only alerts on their tenant's workloads.

    ``?state=`` one of open, firing, acknowledged, resolved; ``?severity=`` one of info,
    warning, critical. An unknown value is a 400, not an empty list.
    """

    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "read"
    serializer_class = AlertSerializer
    extra_query_params = ("state", "severity")  # read below; anything else is a 400

    def get_queryset(self):
        params = self.request.query_params
        errors = {}
        state = params.get("state") or None
        severity = params.get("severity") or None
        if state and state not in STATE_FILTERS:
            errors["state"] = _("one of %(choices)s") % {"choices": ", ".join(STATE_FILTERS)}
        if severity and severity not in SEVERITY_FILTERS:
            errors["severity"] = _("one of %(choices)s") % {"choices": ", ".join(SEVERITY_FILTERS)}
        if errors:
            raise ValidationError(errors)
        return alerts_for_triage(
            alerts_visible_to(self.request.user), state=state, severity=severity
        )


class AlertDetailView(TenantScopedMixin, RetrieveAPIView):
    """One alert; another tenant's is a 404."""

    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "read"
    serializer_class = AlertSerializer

    def base_queryset(self):
        return Alert.objects.select_related("rule", "entity__cluster", "tenant")


ALERT_COMMANDS = {"acknowledge": alert_acknowledge, "resolve": alert_resolve}


@extend_schema(request=None, responses={200: AlertSerializer})
class AlertCommandView(TenantScopedMixin, APIView):
    """``POST /api/v1/alerts/<id>/acknowledge|resolve/`` (operators, as on the alerts page).

    Another tenant's alert is a 404 before any permission check; an illegal transition (already
    resolved, say) is a 409 naming it.
    """

    # Routed once per command (``command_routes`` in urls.py): each its own OpenAPI operation.

    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "read"

    def base_queryset(self):
        return Alert.objects.all()

    def post(self, request: Request, pk: int, command: str) -> Response:
        alert = get_object_or_404(self.get_queryset(), pk=pk)
        if not request.user.has_perm("monitoring.operate_cluster"):
            raise PermissionDenied(_("Acknowledging and resolving alerts needs the operator role."))
        try:
            alert = ALERT_COMMANDS[command](alert=alert, user=request.user)
        except AlertTransitionError as error:
            return Response({"detail": str(error), "code": "conflict"}, status=409)
        return Response(AlertSerializer(alert, context={"request": request}).data)
