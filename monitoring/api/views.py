"""Foundation API views: who am I, and the process status the status page shows."""

from __future__ import annotations

from django.conf import settings
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from monitoring.api.authentication import IntegrationPrincipal
from monitoring.api.permissions import HasRequiredScope
from monitoring.selectors.heartbeats import heartbeat_statuses

MeSerializer = inline_serializer(
    name="Me",
    fields={
        "kind": serializers.ChoiceField(choices=["user", "token"]),
        "username": serializers.CharField(required=False),
        "name": serializers.CharField(required=False),
        "tenant": serializers.CharField(allow_null=True),
        "roles": serializers.ListField(child=serializers.CharField(), required=False),
        "scopes": serializers.ListField(child=serializers.CharField(), required=False),
        "sees_all_tenants": serializers.BooleanField(required=False),
    },
)

ProcessStatusSerializer = inline_serializer(
    name="ProcessStatus",
    fields={
        "broker": serializers.CharField(),
        "processes": serializers.ListField(
            child=inline_serializer(
                name="ProcessHeartbeat",
                fields={
                    "kind": serializers.CharField(),
                    "name": serializers.CharField(),
                    "last_seen": serializers.DateTimeField(),
                    "age_seconds": serializers.FloatField(),
                    "alive": serializers.BooleanField(),
                    "beats": serializers.IntegerField(),
                },
            )
        ),
    },
)


class MeView(APIView):
    """The authenticated principal: a user with their roles, or a token with its scopes."""

    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "read"

    @extend_schema(responses=MeSerializer)
    def get(self, request: Request) -> Response:
        user = request.user
        if isinstance(user, IntegrationPrincipal):
            return Response(
                {
                    "kind": "token",
                    "name": user.token.name,
                    "tenant": user.tenant.slug if user.tenant else None,
                    "scopes": sorted(user.scopes),
                }
            )
        return Response(
            {
                "kind": "user",
                "username": user.username,
                "tenant": user.tenant.slug if user.tenant else None,
                "roles": sorted(user.groups.values_list("name", flat=True)),
                "sees_all_tenants": user.sees_all_tenants,
            }
        )


class ProcessStatusView(APIView):
    """Workers and beat with their last heartbeat (staff only)."""

    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "read"

    @extend_schema(responses=ProcessStatusSerializer)
    def get(self, request: Request) -> Response:
        if not request.user.sees_all_tenants:
            raise PermissionDenied(_("Only staff may see process status."))
        return Response(
            {
                "broker": settings.BROKER_DESCRIPTION,
                "processes": [
                    {
                        "kind": s.kind,
                        "name": s.name,
                        "last_seen": s.last_seen,
                        "age_seconds": round(s.age_seconds, 1),
                        "alive": s.alive,
                        "beats": s.beats,
                    }
                    for s in heartbeat_statuses()
                ],
            }
        )
