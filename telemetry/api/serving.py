"""A workload's serving bindings: which serving endpoints (model, instance or pod) gates and
plan pages read for it. Anyone who sees the workload lists them; operators create and delete
(the same service as the page and the admin). Another tenant's workload is a 404."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.permissions import HasRequiredScope, principal_has_scope
from accounts.api.scoping import TenantScopedMixin
from inventory.models import Workload
from telemetry.catalogue.serving_bindings import serving_binding_create, serving_binding_delete
from telemetry.catalogue.vouching import author_id_of
from telemetry.models import ServingBinding


class ServingBindingSerializer(serializers.ModelSerializer):
    workload = serializers.PrimaryKeyRelatedField(read_only=True)
    key_prefix = serializers.CharField(
        read_only=True, help_text=_("The serving-endpoint keys (model@instance) it names.")
    )

    class Meta:
        model = ServingBinding
        fields = ["id", "workload", "model_name", "instance", "key_prefix"]


class _WorkloadBindings(TenantScopedMixin, APIView):
    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "read"  # writes check "ingest" after the workload's 404
    serializer_class = ServingBindingSerializer

    def base_queryset(self):
        return Workload.objects.all()

    def workload(self, pk: int) -> Workload:
        return get_object_or_404(self.get_queryset(), pk=pk)

    def require_operator(self, request: Request) -> None:
        if not principal_has_scope(request.user, "ingest"):
            raise PermissionDenied(_("Changing serving bindings needs the operator role."))


class WorkloadServingBindingListView(_WorkloadBindings):
    """List a workload's serving bindings; operators add one (400 naming the problem)."""

    @extend_schema(responses={200: ServingBindingSerializer(many=True)})
    def get(self, request: Request, pk: int) -> Response:
        workload = self.workload(pk)
        rows = ServingBinding.objects.filter(workload=workload).order_by("model_name", "instance")
        return Response(ServingBindingSerializer(rows, many=True).data)

    @extend_schema(request=ServingBindingSerializer, responses={201: ServingBindingSerializer})
    def post(self, request: Request, pk: int) -> Response:
        workload = self.workload(pk)
        self.require_operator(request)
        payload = ServingBindingSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        try:
            binding = serving_binding_create(
                workload_id=workload.pk,
                model_name=payload.validated_data["model_name"],
                instance=payload.validated_data.get("instance", ""),
                created_by_id=author_id_of(request.user),
            )
        except ValidationError as exc:
            raise serializers.ValidationError(_validation_body(exc)) from None
        return Response(ServingBindingSerializer(binding).data, status=status.HTTP_201_CREATED)


class WorkloadServingBindingDetailView(_WorkloadBindings):
    """One binding of a workload; operators delete it."""

    @extend_schema(responses={200: ServingBindingSerializer})
    def get(self, request: Request, pk: int, binding_pk: int) -> Response:
        binding = get_object_or_404(ServingBinding, pk=binding_pk, workload=self.workload(pk))
        return Response(ServingBindingSerializer(binding).data)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, pk: int, binding_pk: int) -> Response:
        binding = get_object_or_404(ServingBinding, pk=binding_pk, workload=self.workload(pk))
        self.require_operator(request)
        serving_binding_delete(binding_id=binding.pk)
        return Response(status=status.HTTP_204_NO_CONTENT)


def _validation_body(exc: ValidationError) -> dict | list:
    if not hasattr(exc, "error_dict"):
        return exc.messages
    # Uniqueness is reported on no field (``__all__``): DRF names that non_field_errors.
    body = exc.message_dict
    if "__all__" in body:
        body["non_field_errors"] = body.pop("__all__")
    return body
