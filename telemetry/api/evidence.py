"""Approving a writer as gate evidence (operators): the API beside the admin action, one
service (``telemetry.catalogue.vouching``). The four-eyes rule on evidence, issue 31 §4."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.permissions import HasRequiredScope
from accounts.api.scoping import StaffOnlyMixin
from telemetry.catalogue.vouching import author_id_of, evidence_source_approve
from telemetry.models import ExporterTarget, PromQLDataSource, ServingBinding

KINDS = {
    "exporter-targets": ExporterTarget,
    "promql-sources": PromQLDataSource,
    "serving-bindings": ServingBinding,
}


class EvidenceApprovalSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=sorted(KINDS))
    id = serializers.IntegerField()
    created_by = serializers.IntegerField(allow_null=True)
    approved_by = serializers.IntegerField()
    approved_at = serializers.DateTimeField()


class EvidenceApproveView(StaffOnlyMixin, APIView):
    """``POST``: approve an exporter target, PromQL data source or serving binding as gate
    evidence. Refused (400) to the person who made or last changed it: a gate on their own
    plan counts it only once someone else approved it."""

    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "ingest"
    staff_only_message = _("Evidence sources are approved by cluster operators only.")

    @extend_schema(request=None, responses=EvidenceApprovalSerializer)
    def post(self, request: Request, kind: str, pk: int) -> Response:
        model = KINDS.get(kind)
        if model is None:
            raise serializers.ValidationError(
                {"kind": [_("Use one of: %(kinds)s.") % {"kinds": ", ".join(sorted(KINDS))}]}
            )
        source = get_object_or_404(model, pk=pk)
        user_id = author_id_of(request.user)
        if user_id is None:
            raise serializers.ValidationError(
                _("Only a person (or a token with an owner) can approve evidence.")
            )
        try:
            approved = evidence_source_approve(source=source, user_id=user_id)
        except ValidationError as exc:
            raise serializers.ValidationError(exc.messages) from None
        return Response(
            EvidenceApprovalSerializer(
                {
                    "kind": kind,
                    "id": approved.pk,
                    "created_by": approved.created_by_id,
                    "approved_by": approved.approved_by_id,
                    "approved_at": approved.approved_at,
                }
            ).data
        )
