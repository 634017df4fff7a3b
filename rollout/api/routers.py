"""Traffic routers in the API (operators): ``/api/v1/traffic-routers/``.

Cluster infrastructure like scheduler sources and PromQL data sources: operators create,
change and delete routers, a ``read`` token reads them, customers and tenant-bound tokens get
403 (a plan shows its router by name and kind only). Writes go through
:mod:`rollout.services.routers`, the admin's path too. A webhook router's
``webhook_secret_ref`` (the environment variable holding its signing secret) is write-only:
answers say ``has_webhook_secret`` instead.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.generics import ListCreateAPIView, RetrieveUpdateDestroyAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.api.scoping import OperatorSourceMixin
from rollout.models import TrafficRouter
from rollout.services.audit import Actor
from rollout.services.errors import WorkflowConflict
from rollout.services.routers import (
    ROUTER_FIELDS,
    plans_using,
    router_create,
    router_delete,
    router_update,
)

DUPLICATE = _("A traffic router with this name already exists.")


def _field_errors(exc: DjangoValidationError) -> serializers.ValidationError:
    detail = exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
    return serializers.ValidationError(detail)


class TrafficRouterSerializer(serializers.ModelSerializer):
    """A router's settings; ``webhook_secret_ref`` is write-only (``has_webhook_secret``)."""

    webhook_secret_ref = serializers.CharField(
        write_only=True, required=False, allow_blank=True, max_length=100
    )
    has_webhook_secret = serializers.SerializerMethodField()
    plans = serializers.SerializerMethodField()

    class Meta:
        model = TrafficRouter
        fields = ["id", *ROUTER_FIELDS, "has_webhook_secret", "plans", "created_at"]
        read_only_fields = ["created_at"]

    def get_has_webhook_secret(self, obj: TrafficRouter) -> bool:
        return bool(obj.webhook_secret_ref)

    def get_plans(self, obj: TrafficRouter) -> list[int]:
        """Ids of the plans that name this router (it cannot be deleted while any does)."""
        return [plan.pk for plan in plans_using(obj)]

    def validate(self, attrs: dict) -> dict:
        # The whole router as it would be saved, checked by the model (kind-specific fields):
        # a 400 names the field and nothing is written.
        current = {f: getattr(self.instance, f) for f in ROUTER_FIELDS} if self.instance else {}
        candidate = TrafficRouter(pk=getattr(self.instance, "pk", None), **{**current, **attrs})
        try:
            candidate.full_clean(validate_unique=False)
        except DjangoValidationError as exc:
            raise _field_errors(exc) from None
        return attrs

    def _actor(self) -> Actor:
        return Actor.from_request(self.context["request"])

    def create(self, validated_data: dict) -> TrafficRouter:
        try:
            return router_create(actor=self._actor(), **validated_data)
        except DjangoValidationError as exc:
            raise _field_errors(exc) from None
        except IntegrityError:  # two requests racing past the name check
            raise serializers.ValidationError({"name": [DUPLICATE]}) from None

    def update(self, instance: TrafficRouter, validated_data: dict) -> TrafficRouter:
        try:
            return router_update(router=instance, actor=self._actor(), **validated_data)
        except DjangoValidationError as exc:
            raise _field_errors(exc) from None
        except IntegrityError:
            raise serializers.ValidationError({"name": [DUPLICATE]}) from None


class _Operators(OperatorSourceMixin):
    # As for scheduler sources: a token reads routers with ``read``; changing them is ``ingest``.
    serializer_class = TrafficRouterSerializer
    queryset = TrafficRouter.objects.order_by("name")
    staff_only_message = _("Traffic routers are managed by cluster operators only.")


class TrafficRouterListView(_Operators, ListCreateAPIView):
    """Traffic routers (HAProxy backends, deploy-tool webhooks) plans can move traffic with.

    ``POST`` creates one; the fields a kind needs are required (400 names the field)."""


class TrafficRouterDetailView(_Operators, RetrieveUpdateDestroyAPIView):
    """One traffic router; ``webhook_secret_ref`` is write-only. A plan's next router call uses
    the changed settings. ``DELETE`` is a 409 naming the plans while any plan names it."""

    @extend_schema(
        responses={
            204: None,
            409: OpenApiResponse(description="Plans still use the router; they are named."),
        }
    )
    def delete(self, request: Request, *args, **kwargs) -> Response:
        router = self.get_object()
        try:
            router_delete(router=router, actor=Actor.from_request(request))
        except WorkflowConflict as exc:
            return Response(
                {
                    "detail": str(exc),
                    "code": "conflict",
                    "plans": [plan.pk for plan in plans_using(router)],
                },
                status=status.HTTP_409_CONFLICT,
            )
        return Response(status=status.HTTP_204_NO_CONTENT)
