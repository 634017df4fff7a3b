"""The process status the status page shows: workers and beat with their last heartbeat."""

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

from accounts.api.permissions import HasRequiredScope
from telemetry.read.local.heartbeats import heartbeat_statuses

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
                    "state": serializers.ChoiceField(choices=["alive", "paused", "down"]),
                    "beats": serializers.IntegerField(),
                },
            )
        ),
    },
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
                        "state": s.state,
                        "beats": s.beats,
                    }
                    for s in heartbeat_statuses()
                ],
            }
        )
