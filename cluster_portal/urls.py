"""Top-level URL configuration."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from cluster_portal.security import csp_report
from monitoring.api.prometheus_export import PrometheusMetricsView
from monitoring.views import health

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", PrometheusMetricsView.as_view(), name="prometheus-metrics"),
    path("csp-report/", csp_report, name="csp-report"),
    path("i18n/", include("django.conf.urls.i18n")),
    path("admin/", admin.site.urls),
    # OpenAPI 3 description and interactive docs (Swagger UI from the sidecar package, its
    # set-up script served as a file so the docs work under the strict CSP).
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="swagger-ui"),
    path("api/v1/", include("rollout.api.urls")),
    path("api/v1/", include("monitoring.api.urls")),
    path("twin/", include("simulation.urls")),
    path("whatif/", include("simulation.whatif_urls")),
    path("api/v1/", include("simulation.whatif_api_urls")),
    path("migrations/", include("rollout.urls")),
    path("", include("monitoring.urls")),
]

handler404 = "monitoring.views.errors.not_found"
handler500 = "monitoring.views.errors.server_error"
