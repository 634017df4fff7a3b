"""PromQL data sources per cluster (operators): where a cluster's telemetry is read from."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils.translation import gettext_lazy as _
from rest_framework import serializers
from rest_framework.generics import (
    GenericAPIView,
    ListCreateAPIView,
    RetrieveUpdateDestroyAPIView,
)
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.validators import UniqueValidator

from accounts.api.scoping import OperatorSourceMixin
from inventory.models import Cluster
from telemetry.catalogue.vouching import author_id_of, evidence_source_authored
from telemetry.models import PromQLDataSource
from telemetry.receivers.promql_sync import promql_source_sync

_AUTHOR_FIELDS = ("created_by_id", "created_at", "approved_by_id", "approved_at")
DUPLICATE = _("This cluster already has a PromQL data source; edit that one.")


class PromQLDataSourceSerializer(serializers.ModelSerializer):
    cluster = serializers.SlugRelatedField(
        slug_field="name",
        queryset=Cluster.objects.all(),
        validators=[UniqueValidator(PromQLDataSource.objects.all(), message=DUPLICATE)],
    )
    bearer_token = serializers.CharField(
        write_only=True, required=False, allow_blank=True, max_length=2000
    )
    has_bearer_token = serializers.SerializerMethodField()

    class Meta:
        model = PromQLDataSource
        fields = ["id", "cluster", "url", "bearer_token", "has_bearer_token", "selector",
                  "label_map", "timeout_seconds", "enabled", "last_success_at",
                  "last_error_at", "last_error", "created_by", "created_at", "approved_by",
                  "approved_at"]  # fmt: skip
        read_only_fields = ["last_success_at", "last_error_at", "last_error", "created_by",
                            "created_at", "approved_by", "approved_at"]  # fmt: skip

    def get_has_bearer_token(self, obj: PromQLDataSource) -> bool:
        return bool(obj.bearer_token)

    def validate(self, attrs: dict) -> dict:
        instance = PromQLDataSource(**{**self._current(), **attrs})
        instance.full_clean(exclude=["cluster"] if self.instance else None, validate_unique=False)
        return attrs

    def save(self, **kwargs) -> PromQLDataSource:
        # Whoever creates or changes a source is its author; an approval lapses (four eyes).
        request = self.context.get("request")
        marker = PromQLDataSource()
        evidence_source_authored(source=marker, user_id=author_id_of(request and request.user))
        kwargs.update({f: getattr(marker, f) for f in _AUTHOR_FIELDS})
        # Two requests racing past the check meet the one-per-cluster constraint: still a 400.
        try:
            with transaction.atomic():
                return super().save(**kwargs)
        except IntegrityError:
            raise serializers.ValidationError({"cluster": [DUPLICATE]}) from None

    def _current(self) -> dict:
        if self.instance is None:
            return {}
        return {f: getattr(self.instance, f) for f in self.Meta.fields if f not in ("id",
                "has_bearer_token", "last_success_at", "last_error_at", "last_error", "created_by",
                "created_at", "approved_by", "approved_at")}  # fmt: skip


class _Operators(OperatorSourceMixin):
    serializer_class = PromQLDataSourceSerializer
    queryset = PromQLDataSource.objects.select_related("cluster").order_by("cluster__name")
    staff_only_message = _("Data sources are managed by cluster operators only.")


class PromQLDataSourceListView(_Operators, ListCreateAPIView):
    """PromQL data sources: a cluster listed here is read from its server, not the store."""


class PromQLDataSourceDetailView(_Operators, RetrieveUpdateDestroyAPIView):
    """One PromQL data source; ``bearer_token`` is write-only."""


class PromQLDataSourceSyncView(_Operators, GenericAPIView):
    """``POST``: register the nodes and cards the source's server reports (no samples are
    copied) and record who holds them (attribution intervals); answers how many cards it
    named, how many are held and the interval changes. A server that is down is a 503 and
    nothing is written."""

    def post(self, request: Request, pk: int) -> Response:
        source = self.get_object()
        result = promql_source_sync(source=source)
        return Response(
            {
                "cluster": source.cluster.name,
                "cards": result.cards,
                "held": result.held,
                "attribution": result.attribution,
            }
        )
