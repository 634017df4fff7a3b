"""What-if runs over the REST API (staff only: runs are cluster planning, not tenant data).

``GET /api/v1/whatif/`` lists runs (paginated, ``?status=``), ``POST`` queues one (operators;
the same validation as the page's form, engine included), ``GET /api/v1/whatif/<id>/`` answers
one run with its result.
"""

from __future__ import annotations

from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.generics import ListCreateAPIView, RetrieveAPIView
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.api.permissions import HasRequiredScope
from accounts.selectors.scoping import principal_sees_all
from cluster_portal.web.errors import form_validation_error
from simulation.models import WhatIfRun
from simulation.services.whatif import whatif_create
from simulation.whatif_forms import WhatIfForm

LIST_FIELDS = ["id", "status", "progress", "cards", "hardware", "hours", "seed", "seeds",
               "trace_kind", "trace_name", "serve_model", "error", "created_at",
               "finished_at"]  # fmt: skip


class WhatIfRunSerializer(serializers.ModelSerializer):
    class Meta:
        model = WhatIfRun
        fields = LIST_FIELDS
        read_only_fields = LIST_FIELDS


class WhatIfRunDetailSerializer(WhatIfRunSerializer):
    class Meta(WhatIfRunSerializer.Meta):
        fields = [*LIST_FIELDS, "result"]
        read_only_fields = fields


WhatIfCreateSerializer = inline_serializer(
    name="WhatIfCreate",
    fields={
        "cards": serializers.IntegerField(min_value=64, max_value=4096),
        "hardware": serializers.CharField(),
        "hours": serializers.FloatField(min_value=1, max_value=48),
        "seed": serializers.IntegerField(min_value=0),
        "seeds": serializers.IntegerField(min_value=1, max_value=10, required=False),
        "trace_kind": serializers.ChoiceField(
            choices=WhatIfRun.TraceKind.choices, required=False, allow_blank=True
        ),
        "trace_file": serializers.FileField(required=False),
        "serve_model": serializers.CharField(required=False, allow_blank=True),
    },
)


class _StaffOnly:
    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "read"

    def initial(self, request: Request, *args, **kwargs) -> None:
        super().initial(request, *args, **kwargs)
        if not principal_sees_all(request.user):
            raise PermissionDenied(_("What-if runs are visible to cluster staff only."))


class WhatIfListView(_StaffOnly, ListCreateAPIView):
    """Runs, newest first, without result bodies; POST queues a new run."""

    serializer_class = WhatIfRunSerializer
    filterset_fields = ["status"]
    parser_classes = [JSONParser, MultiPartParser, FormParser]

    def get_queryset(self):
        return WhatIfRun.objects.defer("trace_text", "result").order_by("-created_at")

    @extend_schema(request=WhatIfCreateSerializer, responses={201: WhatIfRunSerializer})
    def post(self, request: Request) -> Response:
        if not request.user.has_perm("monitoring.operate_cluster"):
            raise PermissionDenied(_("Starting what-if runs needs the operator role."))
        form = WhatIfForm(data=request.data, files=request.FILES)
        if not form.is_valid():
            raise form_validation_error(form)
        data = form.cleaned_data
        run = whatif_create(
            cards=data["cards"],
            hardware=data["hardware"],
            hours=data["hours"],
            seed=data["seed"],
            seeds=data["seeds"],
            trace_kind=data["trace_kind"],
            trace_name=data["trace_name"],
            trace_text=data["trace_text"],
            serve_model=data.get("serve_model") or "",
            created_by=request.user,
        )
        return Response(WhatIfRunSerializer(run).data, status=201)


class WhatIfDetailView(_StaffOnly, RetrieveAPIView):
    """One run with its result (both policies' summaries and series)."""

    serializer_class = WhatIfRunDetailSerializer
    queryset = WhatIfRun.objects.defer("trace_text")
