"""What-if runs over the REST API (staff only: runs are cluster planning, not tenant data)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from monitoring.api.permissions import HasRequiredScope
from monitoring.selectors.scoping import principal_sees_all
from simulation.models import WhatIfRun

LIST_FIELDS = ("id", "status", "progress", "cards", "hardware", "hours", "seed", "trace_kind",
               "trace_name", "error", "created_at", "finished_at")  # fmt: skip


def _check(request: Request) -> None:
    if not principal_sees_all(request.user):
        raise PermissionDenied("What-if runs are visible to cluster staff only.")


class WhatIfListView(APIView):
    """``GET``: the latest 50 runs with status and progress (no result bodies)."""

    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "read"

    def get(self, request: Request) -> Response:
        _check(request)
        runs = WhatIfRun.objects.values(*LIST_FIELDS)[:50]
        return Response({"results": list(runs)})


class WhatIfDetailView(APIView):
    """``GET``: one run with its result (both policies' summaries and series)."""

    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "read"

    def get(self, request: Request, pk: int) -> Response:
        _check(request)
        run = get_object_or_404(WhatIfRun, pk=pk)
        body = {name: getattr(run, name) for name in LIST_FIELDS}
        body["result"] = run.result
        return Response(body)
