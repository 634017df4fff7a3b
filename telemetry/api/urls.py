from django.urls import path

from telemetry.api import (
    datasources,
    evidence,
    exporters,
    ingest,
    readings,
    remote_write,
    serving,
    status,
)

urlpatterns = [
    path("status/processes/", status.ProcessStatusView.as_view(), name="process-status"),
    path("telemetry/samples/", ingest.SampleBatchView.as_view(), name="telemetry-samples"),
    path(
        "telemetry/prometheus/",
        ingest.PrometheusIngestView.as_view(),
        name="telemetry-prometheus",
    ),
    path(
        "telemetry/remote-write/",
        remote_write.RemoteWriteView.as_view(),
        name="telemetry-remote-write",
    ),
    path("metrics/", ingest.MetricCatalogueView.as_view(), name="metric-catalogue"),
    path("telemetry/series/", readings.SeriesView.as_view(), name="telemetry-series"),
    path("accelerators/", readings.AcceleratorListView.as_view(), name="accelerators"),
    path(
        "promql-sources/",
        datasources.PromQLDataSourceListView.as_view(),
        name="promql-sources",
    ),
    path(
        "promql-sources/<int:pk>/",
        datasources.PromQLDataSourceDetailView.as_view(),
        name="promql-source",
    ),
    path(
        "promql-sources/<int:pk>/sync/",
        datasources.PromQLDataSourceSyncView.as_view(),
        name="promql-source-sync",
    ),
    path("exporters/", exporters.ExporterTargetListView.as_view(), name="exporters"),
    path(
        "evidence-sources/<str:kind>/<int:pk>/approve/",
        evidence.EvidenceApproveView.as_view(),
        name="evidence-source-approve",
    ),
    path(
        "workloads/<int:pk>/serving-bindings/",
        serving.WorkloadServingBindingListView.as_view(),
        name="workload-serving-bindings",
    ),
    path(
        "workloads/<int:pk>/serving-bindings/<int:binding_pk>/",
        serving.WorkloadServingBindingDetailView.as_view(),
        name="workload-serving-binding",
    ),
]
