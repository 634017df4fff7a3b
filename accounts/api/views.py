"""Who am I: the caller's identity, tenant, roles and token scopes."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.authentication import IntegrationPrincipal
from accounts.api.permissions import HasRequiredScope

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
