"""Top-level URL configuration."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from cluster_portal.security import csp_report
from cluster_portal.web import health
from telemetry.api.prometheus_export import PrometheusMetricsView
from telemetry.api.topology_export import TopologyMetricsView

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("favicon.ico", health.favicon, name="favicon"),
    path("metrics", PrometheusMetricsView.as_view(), name="prometheus-metrics"),
    path("metrics/topology", TopologyMetricsView.as_view(), name="topology-metrics"),
    path("csp-report/", csp_report, name="csp-report"),
    path("i18n/", include("django.conf.urls.i18n")),
    path("admin/", admin.site.urls),
    # OpenAPI 3 description and interactive docs (Swagger UI from the sidecar package, its
    # set-up script served as a file so the docs work under the strict CSP).
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="swagger-ui"),
    path("api/v1/", include("rollout.api.urls")),
    path("api/v1/", include("cluster_portal.api_urls")),
    path("twin/", include("simulation.urls")),
    path("whatif/", include("simulation.whatif_urls")),
    path("api/v1/", include("simulation.whatif_api_urls")),
    path("migrations/", include("rollout.urls")),
    path("inventory/", include("inventory.urls")),
    path("", include("accounts.urls")),
    path("", include("telemetry.urls")),
    path("", include("alerts.urls")),
    path("", include("scheduling.urls")),
    path("", include("cost.urls")),
    path("", include("dashboards.urls")),
]

handler404 = "cluster_portal.web.error_pages.not_found"
handler500 = "cluster_portal.web.error_pages.server_error"
