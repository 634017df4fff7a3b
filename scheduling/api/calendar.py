"""The day/night window calendar over the API: staff read (operators, approvers, read
tokens of operator level); the commands (request, approve, reject, apply) go through
``scheduling.services.calendar``, which checks the role, the four-eyes rule and the revision
and audits every refusal. Customers get 403: a calendar is the cluster's, no tenant's."""

from __future__ import annotations

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
from accounts.services.actor import Actor
from inventory.models import Cluster
from scheduling.models_calendar import CalendarApplication, CalendarRevision
from scheduling.selectors.calendar import CalendarView, calendar_view, calendars_overview
from scheduling.services.calendar import (
    REVISION_FIELDS,
    calendar_apply,
    calendar_approve,
    calendar_reject,
    calendar_request,
)

COMMANDS = ("request", "approve", "reject", "apply")


class CalendarRevisionSerializer(serializers.ModelSerializer):
    """One revision as proposed, with who asked and who decided (staff read this)."""

    requested_by = serializers.CharField(source="requested_by.username", default="")
    decided_by = serializers.CharField(source="decided_by.username", default="")

    class Meta:
        model = CalendarRevision
        fields = [
            "number",
            "state",
            *REVISION_FIELDS,
            "reason",
            "requested_by",
            "requested_at",
            "decided_by",
            "decided_at",
            "decision_note",
            "whatif",
        ]


class CalendarApplicationSerializer(serializers.ModelSerializer):
    """One application: each step asked vs confirmed."""

    revision = serializers.IntegerField(source="revision.number")
    applied_by = serializers.CharField(source="applied_by.username", default="")

    class Meta:
        model = CalendarApplication
        fields = [
            "id",
            "revision",
            "outcome",
            "message",
            "steps",
            "applied_by",
            "started_at",
            "finished_at",
        ]


class CalendarSerializer(serializers.Serializer):
    """A cluster's calendar: newest and applied revision numbers, recent revisions and
    applications."""

    cluster_id = serializers.IntegerField(source="cluster.pk")
    cluster = serializers.CharField(source="cluster.name")
    revision = serializers.SerializerMethodField()
    applied_revision = serializers.SerializerMethodField()
    revisions = CalendarRevisionSerializer(many=True)
    applications = CalendarApplicationSerializer(many=True)

    def get_revision(self, view: CalendarView) -> int:
        return view.calendar.revision if view.calendar else 0

    def get_applied_revision(self, view: CalendarView) -> int | None:
        applied = view.calendar.applied if view.calendar else None
        return applied.number if applied else None


class CalendarRequestSerializer(serializers.Serializer):
    """A proposed revision. Validation beyond types is the model's (one place)."""

    timezone = serializers.CharField(max_length=60, default="UTC")
    day_start = serializers.TimeField()
    day_end = serializers.TimeField()
    inference_partition = serializers.CharField(max_length=100, allow_blank=True, default="")
    inference_nodes = serializers.ListField(
        child=serializers.CharField(max_length=200), default=list, max_length=10_000
    )
    inference_accounts = serializers.ListField(
        child=serializers.CharField(max_length=100), default=list, max_length=1000
    )
    training_partitions = serializers.ListField(
        child=serializers.CharField(max_length=100), default=list, max_length=1000
    )
    defer_min_cards = serializers.IntegerField(min_value=0, max_value=100_000, default=1)
    slurm_conf = serializers.CharField(max_length=500, allow_blank=True, default="")
    cluster_queue = serializers.CharField(max_length=253, allow_blank=True, default="")
    flavor = serializers.CharField(max_length=253, allow_blank=True, default="")
    resource = serializers.CharField(max_length=253, allow_blank=True, default="")
    day_quota = serializers.IntegerField(min_value=0, allow_null=True, default=None)
    night_quota = serializers.IntegerField(min_value=0, allow_null=True, default=None)
    reason = serializers.CharField(max_length=2000, allow_blank=True, default="")

    def validate(self, attrs: dict) -> dict:
        unknown = set(self.initial_data) - set(self.fields)
        if unknown:
            raise serializers.ValidationError(
                {name: [_("Unknown field.")] for name in sorted(unknown)}
            )
        return attrs


class CalendarDecisionSerializer(serializers.Serializer):
    """The revision decided on (the one the caller saw: a newer one makes it a 409)."""

    revision = serializers.IntegerField(min_value=1)
    note = serializers.CharField(max_length=2000, allow_blank=True, default="")


class _Staff(StaffOnlyMixin):
    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "read"  # what each command needs is the service's to check and audit
    staff_only_message = _("Window calendars are visible to cluster staff only.")


class CalendarListView(_Staff, APIView):
    """Every cluster with a scheduler source or a calendar, with its calendar."""

    @extend_schema(responses={200: CalendarSerializer(many=True)}, operation_id="calendars_list")
    def get(self, request: Request) -> Response:
        return Response(CalendarSerializer(calendars_overview(), many=True).data)


class CalendarDetailView(_Staff, APIView):
    """One cluster's calendar."""

    @extend_schema(responses={200: CalendarSerializer}, operation_id="calendar_retrieve")
    def get(self, request: Request, pk: int) -> Response:
        cluster = get_object_or_404(Cluster, pk=pk)
        return Response(CalendarSerializer(calendar_view(cluster)).data)


def command_schema(command: str) -> dict:
    body = CalendarRequestSerializer if command == "request" else CalendarDecisionSerializer
    answer = {
        "request": CalendarRevisionSerializer,
        "apply": CalendarApplicationSerializer,
    }.get(command, CalendarRevisionSerializer)
    return {"request": body, "responses": {200: answer, 201: answer}}


class CalendarCommandView(_Staff, APIView):
    """``POST …/<cluster id>/<command>/``: ``request`` a revision (operators), ``approve`` or
    ``reject`` the newest (approvers, never the requester), ``apply`` the approved newest
    (operators; answers the application, each step asked vs confirmed)."""

    def post(self, request: Request, pk: int, command: str) -> Response:
        cluster = get_object_or_404(Cluster, pk=pk)
        actor = Actor.from_request(request)
        if command == "request":
            body = CalendarRequestSerializer(data=request.data)
            body.is_valid(raise_exception=True)
            revision = calendar_request(cluster=cluster, actor=actor, **body.validated_data)
            return Response(CalendarRevisionSerializer(revision).data, status=201)
        body = CalendarDecisionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        number, note = body.validated_data["revision"], body.validated_data["note"]
        if command == "apply":
            application = calendar_apply(cluster=cluster, actor=actor, expected_revision=number)
            return Response(CalendarApplicationSerializer(application).data)
        decide = calendar_approve if command == "approve" else calendar_reject
        revision = decide(cluster=cluster, actor=actor, expected_revision=number, note=note)
        return Response(CalendarRevisionSerializer(revision).data)
