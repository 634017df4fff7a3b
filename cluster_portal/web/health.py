"""Liveness and readiness probes for load balancers and orchestrators."""

from django.contrib.staticfiles import finders
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from cluster_portal.web.readiness import readiness


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """The process is up and serving; touches nothing else."""
    return JsonResponse({"status": "ok"})


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """200 when the database and the broker answer; 503 naming the failing component.

    Anonymous callers (load balancers) get component names and states only; the details —
    broker and database descriptions, error texts that may carry host names and ports — are
    for signed-in staff.
    """
    checks = readiness()
    failing = [c.name for c in checks if not c.ok]
    user = getattr(request, "user", None)
    detailed = bool(user is not None and user.is_authenticated and user.is_staff)
    body = {
        "status": "ok" if not failing else "unavailable",
        "failing": failing,
        "components": {
            c.name: {"ok": c.ok, **({"detail": c.detail} if detailed else {})} for c in checks
        },
    }
    return JsonResponse(body, status=503 if failing else 200)


_FAVICON: bytes | None = None


@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    """``/favicon.ico``, which browsers and tools ask for whatever the page's icon link says
    (it answered 404 on every page): the portal's SVG icon, cached for a day."""
    global _FAVICON
    if _FAVICON is None:
        with open(finders.find("img/favicon.svg"), "rb") as icon:
            _FAVICON = icon.read()
    response = HttpResponse(_FAVICON, content_type="image/svg+xml")
    response["Cache-Control"] = "public, max-age=86400"
    return response
