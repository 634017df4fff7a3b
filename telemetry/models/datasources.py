"""Where a cluster's telemetry comes from when it already runs Prometheus: remote-write in
(receive counters per cluster) and PromQL out (a query server the read API asks instead of
the local store)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from cluster_portal.web.contact_status import ContactStatus
from cluster_portal.web.outbound import validate_outbound_url
from telemetry.models.vouching import VouchedEvidence

# The portal-side label names a mapping may rename (what dcgm-exporter and npu-exporter print,
# plus Prometheus' ``instance``, the host of last resort).
MAPPABLE_LABELS = (
    "Hostname",
    "hostname",
    "UUID",
    "uuid",
    "gpu",
    "modelName",
    "id",
    "vdie_id",
    "model_name",
    "instance",
)


def validate_label_map(value: object) -> None:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and v for k, v in value.items()
    ):
        raise ValidationError(_("A JSON object of exporter label → server label names."))
    unknown = sorted(set(value) - set(MAPPABLE_LABELS))
    if unknown:
        raise ValidationError(
            _("Unknown exporter label(s) %(labels)s; use one of %(known)s.")
            % {"labels": ", ".join(unknown), "known": ", ".join(MAPPABLE_LABELS)}
        )


class PromQLDataSource(VouchedEvidence, ContactStatus):
    """A Prometheus-compatible query API (Prometheus, Thanos, VictoriaMetrics, Mimir) that
    holds this cluster's exporter series. When enabled, the telemetry read API answers this
    cluster's series, window aggregates, latest values, top-N and heatmaps from it with
    ``/api/v1/query`` and ``/api/v1/query_range``; no samples are copied into the portal. Its
    sync (``telemetry.receivers.promql_sync``, every ``PROMQL_SYNC_SECONDS`` and on demand)
    registers the cards it reports and samples who holds them into attribution intervals."""

    cluster = models.OneToOneField(
        "inventory.Cluster", on_delete=models.CASCADE, related_name="promql_source"
    )
    url = models.URLField(
        _("query URL"),
        max_length=500,
        validators=[validate_outbound_url],
        help_text=_(
            "Base URL of the Prometheus HTTP API, without /api/v1 "
            "(e.g. http://thanos-query:9090 or http://vmselect:8481/select/0/prometheus)."
        ),
    )
    bearer_token = models.CharField(
        _("bearer token"),
        max_length=2000,
        blank=True,
        help_text=_("Sent as Authorization: Bearer; leave empty for none."),
    )
    selector = models.CharField(
        _("extra label matchers"),
        max_length=500,
        blank=True,
        help_text=_(
            'Added to every series selector, e.g. cluster="prod-a" when one Thanos holds '
            "several clusters."
        ),
    )
    label_map = models.JSONField(
        _("label mapping"),
        default=dict,
        blank=True,
        validators=[validate_label_map],
        help_text=_(
            "Exporter label → label name on the server, when relabelling renamed it, e.g. "
            '{"Hostname": "node", "UUID": "gpu_uuid"}.'
        ),
    )
    timeout_seconds = models.FloatField(
        _("timeout (s)"), default=5.0, validators=[MinValueValidator(0.5), MaxValueValidator(60)]
    )
    enabled = models.BooleanField(_("enabled"), default=True)

    class Meta:
        db_table = "monitoring_promqldatasource"  # every telemetry table keeps the old prefix
        ordering = ["cluster__name"]
        verbose_name = _("PromQL data source")
        verbose_name_plural = _("PromQL data sources")

    def __str__(self) -> str:
        return f"{self.cluster} ← {self.url}"

    def clean(self) -> None:
        super().clean()
        if self.selector and any(c in self.selector for c in "{}"):
            raise ValidationError(
                {"selector": _('Matchers only, without braces: cluster="prod-a",env="x".')}
            )


class RemoteWriteStatus(ContactStatus):
    """What the remote-write receiver got for one cluster: running totals and the last answer,
    shown on ``/exporters/``."""

    cluster = models.OneToOneField(
        "inventory.Cluster", on_delete=models.CASCADE, related_name="remote_write_status"
    )
    requests = models.PositiveBigIntegerField(_("requests"), default=0)
    rejected = models.PositiveBigIntegerField(_("rejected requests"), default=0)
    # Answered 503 after waiting in the server's queue past the sender's timeout (the sender
    # resends them: not lost, but the receiver is behind).
    shed = models.PositiveBigIntegerField(_("shed requests"), default=0)
    samples = models.PositiveBigIntegerField(_("samples received"), default=0)
    inserted = models.PositiveBigIntegerField(_("points inserted"), default=0)
    duplicates = models.PositiveBigIntegerField(_("duplicate points"), default=0)
    dropped = models.PositiveBigIntegerField(_("samples dropped"), default=0)
    last_seen_at = models.DateTimeField(_("last request"), null=True, blank=True)
    last_counts = models.JSONField(_("last counts"), default=dict, blank=True)

    class Meta:
        db_table = "monitoring_remotewritestatus"
        ordering = ["cluster__name"]
        verbose_name = _("remote-write status")
        verbose_name_plural = _("remote-write statuses")

    def __str__(self) -> str:
        return str(self.cluster)
