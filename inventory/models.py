"""Inventory: hardware catalogue and the topology cluster → supernode → rack → node → accelerator.

Exporters know only hosts and devices, so a node's rack is optional: scraped nodes are
registered under their cluster and can be placed in a rack later.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from functools import lru_cache

import re2
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from inventory.label_selectors import SelectorError, parse_selector


class Confidence(models.TextChoices):
    HIGH = "high", _("high (datasheet)")
    MEDIUM = "medium", _("medium")
    LOW = "low", _("low (press figures disagree or assumed)")


class HardwareModel(models.Model):
    """An accelerator model with the figures the twin and the cost model use.

    ``confidence`` is shown next to every figure: several Ascend numbers are press or roadmap
    figures, not datasheets.
    """

    slug = models.SlugField(_("id"), max_length=40, unique=True)
    name = models.CharField(_("name"), max_length=100)
    vendor = models.CharField(_("vendor"), max_length=40)
    hbm_bytes = models.PositiveBigIntegerField(_("HBM bytes"))
    hbm_bandwidth_bytes_per_s = models.FloatField(
        _("HBM bandwidth (bytes/s)"), validators=[MinValueValidator(0)]
    )
    peak_flops = models.FloatField(
        _("peak dense BF16/FP16 FLOP/s"), validators=[MinValueValidator(0)]
    )
    tdp_watts = models.FloatField(_("TDP (W)"), null=True, blank=True)
    confidence = models.CharField(_("confidence"), max_length=10, choices=Confidence.choices)
    source_note = models.CharField(_("source"), max_length=300, blank=True)

    class Meta:
        db_table = "monitoring_hardwaremodel"  # kept from before the app split
        ordering = ["vendor", "slug"]
        verbose_name = _("hardware model")
        verbose_name_plural = _("hardware models")

    def __str__(self) -> str:
        return self.name


class Cluster(models.Model):
    """A pool of accelerators: the unified cluster, or a split/legacy cluster migrated from."""

    class Kind(models.TextChoices):
        UNIFIED = "unified", _("unified training + inference")
        SPLIT = "split", _("split (separate training and inference pools)")
        LEGACY = "legacy", _("legacy")

    name = models.SlugField(_("name"), max_length=60, unique=True)
    kind = models.CharField(_("kind"), max_length=10, choices=Kind.choices)
    description = models.CharField(_("description"), max_length=300, blank=True)
    hardware_model = models.ForeignKey(
        HardwareModel,
        verbose_name=_("hardware model"),
        null=True,
        blank=True,
        on_delete=models.PROTECT,
    )
    # Operator-set: the cluster a page opens on when none is asked for (one per side: the
    # unified cluster and the split/legacy baseline). A new twin run is never flagged by itself.
    default_for_pages = models.BooleanField(
        _("default for pages"),
        default=False,
        help_text=_(
            "Pages without a chosen cluster (overview, hardware, memory, network, report, "
            "cost) open on this one. Set by an operator; test twin runs are not defaults."
        ),
    )
    # How exporter samples are attributed (docs/architecture.md §5; README "Chip identity").
    host_labels = models.CharField(
        _("host labels"),
        max_length=200,
        blank=True,
        validators=[
            RegexValidator(
                r"^\s*[A-Za-z_][A-Za-z0-9_]*(\s*,\s*[A-Za-z_][A-Za-z0-9_]*)*\s*$",
                _("A comma-separated list of label names, e.g. Hostname, node, instance."),
            )
        ],
        help_text=_(
            "Labels that name a sample's host, first present wins; `instance` counts by its "
            "host part. Empty: Hostname, hostname, node, instance."
        ),
    )
    scrape_interval_seconds = models.PositiveIntegerField(
        _("scrape interval (s)"),
        default=15,
        validators=[MinValueValidator(1), MaxValueValidator(3600)],
        help_text=_("How often exporters are scraped; absence is counted in these intervals."),
    )
    absent_after_intervals = models.PositiveSmallIntegerField(
        _("absent after (intervals)"),
        default=4,
        validators=[MinValueValidator(1), MaxValueValidator(1000)],
        help_text=_("A card not seen for this many scrape intervals is shown absent and alerts."),
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        db_table = "monitoring_cluster"  # kept from before the app split
        ordering = ["name"]
        verbose_name = _("cluster")
        verbose_name_plural = _("clusters")

    def __str__(self) -> str:
        return self.name

    def absence_after(self) -> timedelta:
        """How long an exporter-fed card may go unseen before it is absent."""
        return timedelta(seconds=self.scrape_interval_seconds * self.absent_after_intervals)


class Supernode(models.Model):
    """A supernode (e.g. CloudMatrix-384 style): racks joined by a non-blocking fabric."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="supernodes")
    name = models.CharField(_("name"), max_length=60)

    class Meta:
        db_table = "monitoring_supernode"  # kept from before the app split
        ordering = ["cluster", "name"]
        verbose_name = _("supernode")
        verbose_name_plural = _("supernodes")
        constraints = [
            models.UniqueConstraint(fields=["cluster", "name"], name="supernode_unique_name")
        ]

    def __str__(self) -> str:
        return f"{self.cluster.name}/{self.name}"


class Rack(models.Model):
    """A rack inside a supernode."""

    supernode = models.ForeignKey(Supernode, on_delete=models.CASCADE, related_name="racks")
    name = models.CharField(_("name"), max_length=60)

    class Meta:
        db_table = "monitoring_rack"  # kept from before the app split
        ordering = ["supernode", "name"]
        verbose_name = _("rack")
        verbose_name_plural = _("racks")
        constraints = [
            models.UniqueConstraint(fields=["supernode", "name"], name="rack_unique_name")
        ]

    def __str__(self) -> str:
        return f"{self.supernode}/{self.name}"


class Node(models.Model):
    """A server holding accelerators, identified by hostname inside its cluster."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="nodes")
    rack = models.ForeignKey(
        Rack, null=True, blank=True, on_delete=models.SET_NULL, related_name="nodes"
    )
    hostname = models.CharField(_("hostname"), max_length=200)
    registered_by_exporter = models.BooleanField(_("registered by an exporter"), default=False)
    # From an inventory import: what an operator says the node holds. Exporters create the
    # cards themselves (a card's identity is its chip ID); these only describe them.
    hardware_model = models.ForeignKey(
        HardwareModel,
        verbose_name=_("card model"),
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        help_text=_("The model of the node's cards, as the inventory import states it."),
    )
    cards_expected = models.PositiveIntegerField(
        _("cards expected"),
        null=True,
        blank=True,
        help_text=_("How many cards the node holds, as the inventory import states it."),
    )

    class Meta:
        db_table = "monitoring_node"  # kept from before the app split
        ordering = ["cluster", "hostname"]
        verbose_name = _("node")
        verbose_name_plural = _("nodes")
        constraints = [
            models.UniqueConstraint(fields=["cluster", "hostname"], name="node_unique_hostname")
        ]

    def __str__(self) -> str:
        return f"{self.cluster.name}/{self.hostname}"

    def clean(self) -> None:
        if self.rack_id and self.rack.supernode.cluster_id != self.cluster_id:
            raise ValidationError({"rack": _("The rack belongs to another cluster.")})


LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


@lru_cache(maxsize=256)
def hostname_regex(pattern: str) -> re2._Regexp:
    """An operator's hostname pattern compiled by RE2, whose matching time is linear in the
    hostname: Python's backtracking ``re`` spent 30 s on ``^(?P<rack>(a+)+)$`` against one
    30-character name and took a web worker with it. RE2 refuses what it cannot run in
    linear time (backreferences, look-arounds), so such a pattern is refused at save."""
    options = re2.Options()
    options.log_errors = False  # the refusal goes to the operator, not to stderr
    return re2.compile(pattern, options=options)


def _regex_error_text(exc: re2.error) -> str:
    reason = exc.args[0] if exc.args else exc
    return reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)


DEFAULT_SUPERNODE = "default"


class TopologyMapping(models.Model):
    """How a real cluster's nodes find their rack and supernode: a label the exporters' series
    carry (e.g. ``rack``, relabelled by Prometheus from a Kubernetes node label), or a regular
    expression on the hostname with named groups ``rack`` and optionally ``supernode``.

    Applied when a node is created or seen without a rack (exporter pushes, remote-write,
    scrapes, PromQL sources), and its hostname pattern to the known nodes when the mapping is
    saved (``inventory.services.topology_mapping_apply``: also moving the nodes the previous
    pattern placed). Otherwise a node already in a rack is not moved by it (an inventory
    import, which is an operator's word, moves nodes).
    """

    cluster = models.OneToOneField(
        Cluster, on_delete=models.CASCADE, related_name="topology_mapping"
    )
    rack_label = models.CharField(
        _("rack label"),
        max_length=100,
        blank=True,
        help_text=_("Exporter label naming the node's rack, e.g. rack."),
    )
    supernode_label = models.CharField(
        _("supernode label"),
        max_length=100,
        blank=True,
        help_text=_("Exporter label naming the node's supernode (optional)."),
    )
    hostname_pattern = models.CharField(
        _("hostname pattern"),
        max_length=300,
        blank=True,
        help_text=_(
            "Regular expression matched against the hostname, with a named group rack and "
            "optionally supernode, e.g. ^(?P<supernode>sn[0-9]+)-(?P<rack>r[0-9]+)-"
        ),
    )
    default_supernode = models.CharField(
        _("default supernode"),
        max_length=60,
        default=DEFAULT_SUPERNODE,
        help_text=_("The supernode of racks whose supernode neither label nor pattern names."),
    )

    class Meta:
        verbose_name = _("topology mapping")
        verbose_name_plural = _("topology mappings")
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(rack_label="") | ~models.Q(hostname_pattern=""),
                name="topology_mapping_names_a_source",
            ),
            models.CheckConstraint(
                condition=~models.Q(default_supernode=""),
                name="topology_mapping_default_supernode",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.cluster.name}: {self.rack_label or self.hostname_pattern}"

    def clean(self) -> None:
        """The one place a mapping is validated (admin, API and services call it)."""
        errors = {}
        if not self.rack_label and not self.hostname_pattern:
            errors["rack_label"] = _("Name a rack label or a hostname pattern (or both).")
        for name in ("rack_label", "supernode_label"):
            value = getattr(self, name)
            if value and not LABEL_NAME.match(value):
                errors[name] = _("%(value)s is not a Prometheus label name.") % {"value": value}
        if self.supernode_label and not self.rack_label:
            errors["supernode_label"] = _("A supernode label needs a rack label.")
        if self.hostname_pattern:
            try:
                groups = hostname_regex(self.hostname_pattern).groupindex
            except re2.error as exc:
                errors["hostname_pattern"] = _(
                    "Not a regular expression this portal runs (RE2 syntax: no backreferences "
                    "or look-arounds): %(error)s"
                ) % {"error": _regex_error_text(exc)}
            else:
                if "rack" not in groups:
                    errors["hostname_pattern"] = _("The pattern needs a named group rack.")
                elif set(groups) - {"rack", "supernode"}:
                    errors["hostname_pattern"] = _(
                        "Only the named groups rack and supernode are used."
                    )
        if errors:
            raise ValidationError(errors)

    def place(self, hostname: str, labels: dict[str, str] | None = None) -> tuple[str, str] | None:
        """``(supernode, rack)`` for a node, or ``None`` when neither the labels nor the
        hostname say. The label wins over the pattern; names longer than a rack's are ignored."""
        labels = labels or {}
        rack = labels.get(self.rack_label) if self.rack_label else None
        supernode = labels.get(self.supernode_label) if self.supernode_label and rack else None
        if not rack and self.hostname_pattern:
            match = hostname_regex(self.hostname_pattern).search(hostname)
            if match:
                rack = match.group("rack")
                supernode = match.groupdict().get("supernode")
        supernode = supernode or self.default_supernode
        if not rack or len(rack) > 60 or len(supernode) > 60:
            return None
        return supernode, rack


class Accelerator(models.Model):
    """One GPU or NPU, or a MIG slice of a GPU (``parent`` set). ``vendor_id`` is the chip's
    own id: the GPU UUID (``<UUID>/gi<GPU_I_ID>`` for a slice) or the Ascend ``vdie_id``
    (docs/architecture.md §5). ``last_seen`` is the newest sample time, updated per batch;
    an exporter-fed card not seen for its cluster's absence threshold is *absent*.
    """

    class Health(models.IntegerChoices):
        HEALTHY = 1, _("healthy")
        UNHEALTHY = 0, _("unhealthy")
        UNKNOWN = -1, _("unknown")

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="accelerators")
    index = models.PositiveIntegerField(
        _("index on node"),
        null=True,
        blank=True,
        help_text=_("Empty when the exporter gives none."),
    )
    vendor_id = models.CharField(_("vendor id"), max_length=200)
    hardware_model = models.ForeignKey(
        HardwareModel, null=True, blank=True, on_delete=models.PROTECT
    )
    model_name = models.CharField(_("reported model name"), max_length=100, blank=True)
    health = models.SmallIntegerField(_("health"), choices=Health.choices, default=Health.UNKNOWN)
    parent = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="slices",
        verbose_name=_("GPU of this MIG slice"),
    )
    mig_profile = models.CharField(_("MIG profile"), max_length=40, blank=True)
    gpu_instance_id = models.PositiveIntegerField(_("GPU instance (GI)"), null=True, blank=True)
    compute_instance_id = models.PositiveIntegerField(
        _("compute instance (CI)"), null=True, blank=True
    )
    last_seen = models.DateTimeField(_("last seen"), null=True, blank=True)

    class Meta:
        db_table = "monitoring_accelerator"  # kept from before the app split
        ordering = ["node", "index"]
        verbose_name = _("accelerator")
        verbose_name_plural = _("accelerators")
        # No unique index per node: exporters behind one address (host from ``instance``)
        # report the same indexes for different chips; identity is the chip id.
        constraints = [
            models.UniqueConstraint(fields=["node", "vendor_id"], name="accelerator_unique_vendor"),
        ]
        indexes = [models.Index(fields=["last_seen"], name="accelerator_last_seen")]

    def __str__(self) -> str:
        return f"{self.node}/{self.index}"

    def is_absent(self, now: datetime | None = None) -> bool:
        """Seen by an exporter once, but not for its cluster's ``absent_after_intervals`` ×
        ``scrape_interval_seconds``: shown "absent" (and alerted), never "healthy". Cards no
        exporter ever reported (the twin's) are never absent."""
        if self.last_seen is None:
            return False
        return self.last_seen < (now or timezone.now()) - self.node.cluster.absence_after()

    def state_label(self, now: datetime | None = None) -> str:
        """What pages and the API show: "absent" over the last reported health."""
        if self.is_absent(now):
            return str(_("absent"))
        return str(self.Health(self.health).label)


class AcceleratorMove(models.Model):
    """Append-only: a known chip was seen under another host (moved, or relabelled). The card
    keeps its id, history and entity; this row records where it was and where it went."""

    accelerator = models.ForeignKey(Accelerator, on_delete=models.CASCADE, related_name="moves")
    from_node = models.ForeignKey(
        Node, null=True, on_delete=models.SET_NULL, related_name="+", verbose_name=_("from")
    )
    to_node = models.ForeignKey(
        Node, null=True, on_delete=models.SET_NULL, related_name="+", verbose_name=_("to")
    )
    from_hostname = models.CharField(_("from host"), max_length=200)
    to_hostname = models.CharField(_("to host"), max_length=200)
    seen_at = models.DateTimeField(_("first seen there"))
    recorded_at = models.DateTimeField(_("recorded at"), auto_now_add=True)

    class Meta:
        ordering = ["-seen_at", "-id"]
        verbose_name = _("accelerator move")
        verbose_name_plural = _("accelerator moves")

    def __str__(self) -> str:
        return f"{self.accelerator.vendor_id}: {self.from_hostname} → {self.to_hostname}"


class Link(models.Model):
    """A fabric link between two endpoints (cards, nodes, switches)."""

    class Kind(models.TextChoices):
        IN_RACK = "in_rack", _("in-rack")
        INTER_RACK = "inter_rack", _("inter-rack")
        INTER_SUPERNODE = "inter_supernode", _("inter-supernode")

    class Status(models.TextChoices):
        UP = "up", _("up")
        DEGRADED = "degraded", _("degraded")
        DOWN = "down", _("down")

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="links")
    key = models.CharField(_("key"), max_length=200)
    kind = models.CharField(_("kind"), max_length=20, choices=Kind.choices)
    endpoint_a = models.CharField(_("endpoint A"), max_length=200)
    endpoint_b = models.CharField(_("endpoint B"), max_length=200)
    capacity_bytes_per_s = models.FloatField(
        _("capacity (bytes/s)"), validators=[MinValueValidator(0)]
    )
    status = models.CharField(_("status"), max_length=10, choices=Status.choices, default=Status.UP)

    class Meta:
        db_table = "monitoring_link"  # kept from before the app split
        ordering = ["cluster", "key"]
        verbose_name = _("link")
        verbose_name_plural = _("links")
        constraints = [models.UniqueConstraint(fields=["cluster", "key"], name="link_unique_key")]

    def __str__(self) -> str:
        return f"{self.cluster.name}/{self.key}"


class Workload(models.Model):
    """A tenant's training job or inference service running on a cluster."""

    class Kind(models.TextChoices):
        TRAINING = "training", _("training")
        INFERENCE = "inference", _("inference")

    class Criticality(models.TextChoices):
        CORE = "core", _("core business")
        NON_CORE = "non_core", _("non-core business")

    tenant = models.ForeignKey(
        "monitoring.Tenant", on_delete=models.PROTECT, related_name="workloads"
    )
    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="workloads")
    name = models.CharField(_("name"), max_length=120)
    kind = models.CharField(_("kind"), max_length=10, choices=Kind.choices)
    criticality = models.CharField(
        _("criticality"), max_length=10, choices=Criticality.choices, default=Criticality.NON_CORE
    )
    cards_requested = models.PositiveIntegerField(_("cards requested"), default=0)
    # Operator targets. TTFT and TPOT are the headline latency SLOs (a request meets its SLO
    # when it meets both); the end-to-end P99 target stays as a secondary figure.
    slo_p99_ms = models.FloatField(_("SLO: end-to-end P99 latency (ms)"), null=True, blank=True)
    slo_ttft_ms = models.FloatField(
        _("SLO: time to first token, P99 (ms)"),
        null=True,
        blank=True,
        validators=[MinValueValidator(0.001)],
    )
    slo_tpot_ms = models.FloatField(
        _("SLO: time per output token, P99 (ms)"),
        null=True,
        blank=True,
        validators=[MinValueValidator(0.001)],
        help_text=_("Operator target, e.g. 100 ms for chat, 50 ms for code completion."),
    )
    # How a real cluster's cards are attributed to this workload: the exporters' pod labels
    # it matches (inventory.label_selectors). Empty: the workload is the twin's, or billed by
    # the cards it requested (labelled as such).
    series_selector = models.CharField(
        _("series selector"),
        max_length=500,
        blank=True,
        default="",
        help_text=_(
            "Exporter labels of the cards this workload runs on, as in PromQL: "
            'namespace="acme-bank", pod=~"llama-70b-.*". Labels: namespace, pod, container, '
            "hpc_job, host."
        ),
    )

    class Meta:
        db_table = "monitoring_workload"  # kept from before the app split
        ordering = ["tenant", "name"]
        verbose_name = _("workload")
        verbose_name_plural = _("workloads")
        constraints = [
            models.UniqueConstraint(fields=["cluster", "name"], name="workload_unique_name"),
            models.CheckConstraint(
                condition=models.Q(slo_p99_ms__isnull=True) | models.Q(slo_p99_ms__gt=0),
                name="workload_slo_p99_positive",
            ),
            models.CheckConstraint(
                condition=(models.Q(slo_ttft_ms__isnull=True) | models.Q(slo_ttft_ms__gt=0))
                & (models.Q(slo_tpot_ms__isnull=True) | models.Q(slo_tpot_ms__gt=0)),
                name="workload_slo_ttft_tpot_positive",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        """The one place SLO targets are validated (admin, API and services call it)."""
        slos = ("slo_ttft_ms", "slo_tpot_ms", "slo_p99_ms")
        if self.kind == self.Kind.TRAINING:
            given = [name for name in slos if getattr(self, name) is not None]
            if given:
                raise ValidationError(
                    {name: _("Latency SLOs apply to inference services.") for name in given}
                )
        errors = {
            name: _("An SLO target must be a positive number of milliseconds.")
            for name in slos
            if getattr(self, name) is not None and getattr(self, name) <= 0
        }
        if self.series_selector:
            try:
                parse_selector(self.series_selector)
            except SelectorError as exc:
                errors["series_selector"] = str(exc)
        if errors:
            raise ValidationError(errors)
