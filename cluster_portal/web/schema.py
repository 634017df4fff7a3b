"""OpenAPI pieces shared by every API module (drf-spectacular).

The token authentication class is described as HTTP bearer; every operation documents the one
error body of :mod:`cluster_portal.web.errors`; dashboard-style endpoints share one payload shape
and one set of time-range parameters.
"""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, inline_serializer
from rest_framework import serializers

from cluster_portal.web.problems import PROBLEM_CONTENT_TYPE
from cluster_portal.web.timerange import PRESETS


class IntegrationTokenScheme(OpenApiAuthenticationExtension):
    """``Authorization: Bearer cp_<prefix>_<secret>`` (see accounts.api.authentication)."""

    target_class = "accounts.api.authentication.IntegrationTokenAuthentication"
    name = "integrationToken"

    def get_security_definition(self, auto_schema) -> dict:
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "cp_<prefix>_<secret>",
            "description": "Integration token with scopes ingest, read and/or approve.",
        }


ERROR_SCHEMA = {
    "type": "object",
    "description": (
        "Every error, as RFC 9457 problem details (application/problem+json): `type` "
        "(about:blank), `title` (the HTTP status phrase), `status`, `instance` (the request "
        "path), `detail` (a sentence for people) and the extension members `code` (a stable "
        "token for programs) and, for invalid input, `errors` (field -> messages)."
    ),
    "properties": {
        "type": {"type": "string", "format": "uri-reference"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "instance": {"type": "string", "format": "uri-reference"},
        "detail": {"type": "string"},
        "code": {"type": "string"},
        "errors": {
            "type": "object",
            "additionalProperties": {"type": "array", "items": {"type": "string"}},
        },
        "row": {"type": "integer"},
        "field": {"type": "string"},
    },
    "required": ["type", "title", "status", "detail", "code"],
}

ERROR_RESPONSES = {
    "400": "Invalid input: `errors` names each field.",
    "401": "Not authenticated.",
    "403": "Authenticated, but not allowed (role, scope or tenant).",
    "404": "No such object, or not visible to you.",
    "405": "Method not allowed.",
    "406": "Not acceptable: ask for application/json (or text/csv where offered).",
    "409": "Conflict: the object changed or the transition is not allowed now.",
    "415": "Unsupported media type.",
    "429": "Too many requests: see Retry-After.",
}


def add_error_responses(result: dict, generator, request, public) -> dict:
    """Postprocessing hook: the shared problem details body on every operation (a CSV
    endpoint's errors are problem details too: a client learns which field was wrong)."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["Error"] = ERROR_SCHEMA
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            responses = operation["responses"]
            content = {PROBLEM_CONTENT_TYPE: {"schema": {"$ref": "#/components/schemas/Error"}}}
            for code, description in ERROR_RESPONSES.items():
                responses.setdefault(code, {"description": description, "content": content})
            for code, body in responses.items():
                # An error a view declares itself (a 503 naming its reason, say) is answered
                # as problem details too, whatever media type the view's success uses.
                if str(code)[0] in "45" and body.get("content"):
                    schema = next(iter(body["content"].values())).get("schema", {})
                    body["content"] = {PROBLEM_CONTENT_TYPE: {"schema": schema}}
    return result


#: The payload every dashboard data endpoint answers (figures are Plotly JSON).
DashboardPayload = inline_serializer(
    name="DashboardPayload",
    fields={
        "kpis": serializers.ListField(child=serializers.DictField()),
        "figures": serializers.DictField(),
        "tables": serializers.DictField(),
        "range": serializers.DictField(),
        "updated": serializers.DateTimeField(),
        "updated_display": serializers.CharField(
            help_text="``updated`` in the portal's time zone, formatted for the request's language"
        ),
        "cluster": serializers.CharField(required=False),
        "workload": serializers.DictField(required=False),
        # Present when the range reaches back before the first data: {"ts", "note"}.
        "data_start": serializers.DictField(required=False),
    },
)

TIME_RANGE_PARAMETERS = [
    OpenApiParameter("range", str, enum=list(PRESETS), description="Preset time range."),
    OpenApiParameter("start", str, description="Custom range start (ISO 8601)."),
    OpenApiParameter("end", str, description="Custom range end (ISO 8601)."),
]

CSV_PARAMETERS = [
    OpenApiParameter(
        "format", str, enum=["json", "csv"], description="csv: one table (name it in `table`)."
    ),
    OpenApiParameter("table", str, description="With format=csv: the table to download."),
]

CLUSTER_PARAMETER = OpenApiParameter(
    "cluster", str, description="Cluster name (default: the first unified cluster)."
)

DASHBOARD_RESPONSES = {
    (200, "application/json"): DashboardPayload,
    (200, "text/csv"): OpenApiTypes.STR,
}

#: A free-form JSON object (figures computed from data; shape documented per endpoint).
JSON_OBJECT = OpenApiTypes.OBJECT
