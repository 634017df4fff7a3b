"""What the portal reads from a cluster's workload scheduler: where the scheduler is, which of
its accounts belong to which tenant, and the jobs, nodes and partitions it reported."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from cluster_portal.web.contact_status import ContactStatus
from cluster_portal.web.outbound import validate_outbound_url

# REST API versions the portal has a normaliser for, oldest first (scheduling/slurm/v0_*.py).
KNOWN_SLURM_API_VERSIONS = ("v0.0.38",)
# States in which a job's cards stay allocated to it (Slurm's names; Kubernetes phases are
# mapped onto them).
JOB_HOLDING_STATES = ("RUNNING", "SUSPENDED", "COMPLETING")

env_name_validator = RegexValidator(
    r"^[A-Za-z_][A-Za-z0-9_]*$",
    _("The name of an environment variable (letters, digits, underscores), not the token."),
)


class SchedulerSource(ContactStatus):
    """A cluster's workload scheduler the portal polls: Slurm through slurmrestd, or a
    Kubernetes API server (Pods, Nodes, Kueue, Volcano). The token (Slurm JWT, Kubernetes
    bearer token) is never stored: ``token_env`` names the environment variable of the portal's
    processes that holds it, so neither the database nor any page or API answer carries the
    secret. For Slurm the REST API version is chosen at each sync from the server's
    ``/openapi/v3`` (the newest one the portal knows); for Kubernetes it is the server's
    version. Either is recorded in ``api_version``."""

    class Kind(models.TextChoices):
        SLURM = "slurm", _("Slurm (slurmrestd)")
        KUBERNETES = "kubernetes", _("Kubernetes (Kueue, Volcano)")

    cluster = models.OneToOneField(
        "inventory.Cluster", on_delete=models.CASCADE, related_name="scheduler_source"
    )
    kind = models.CharField(_("kind"), max_length=20, choices=Kind.choices, default=Kind.SLURM)
    base_url = models.URLField(
        _("base URL"),
        max_length=500,
        validators=[validate_outbound_url],
        help_text=_(
            "slurmrestd's address, without the API path (e.g. http://slurm-head:6820), or the "
            "Kubernetes API server's (e.g. https://k8s-api.example.com:6443)."
        ),
    )
    user_name = models.CharField(
        _("Slurm user name"),
        max_length=100,
        blank=True,
        help_text=_("Sent as X-SLURM-USER-NAME; the user the token was issued for (Slurm only)."),
    )
    token_env = models.CharField(
        _("token environment variable"),
        max_length=100,
        validators=[env_name_validator],
        help_text=_(
            "Name of the environment variable holding the JWT (scontrol token), e.g. "
            "SLURM_JWT_PROD_A, or the Kubernetes bearer token. The token itself is never "
            "stored or shown."
        ),
    )
    timeout_seconds = models.FloatField(
        _("timeout (s)"), default=10.0, validators=[MinValueValidator(0.5), MaxValueValidator(60)]
    )
    enabled = models.BooleanField(_("enabled"), default=True)
    api_version = models.CharField(_("API version in use"), max_length=20, blank=True)
    # Epoch seconds of the last complete job answer: the next poll asks ?update_time= and gets
    # 304 when nothing changed.
    jobs_update_time = models.BigIntegerField(_("jobs polled up to"), null=True, blank=True)
    # Jobs the last sync refused (unmapped account, unreadable allocation), counted by reason.
    last_refused = models.JSONField(_("refused at last sync"), default=dict, blank=True)
    # Allocated cards the last sync could not join to an inventory card, counted by reason
    # (scheduling.services.attribution): not attributed to anyone, never guessed.
    last_unattributed = models.JSONField(
        _("cards not attributed at last sync"), default=dict, blank=True
    )

    class Meta:
        ordering = ["cluster__name"]
        verbose_name = _("scheduler source")
        verbose_name_plural = _("scheduler sources")

    def __str__(self) -> str:
        return f"{self.cluster} ← {self.base_url}"

    def clean(self) -> None:
        super().clean()
        if self.kind == self.Kind.SLURM and not self.user_name.strip():
            raise ValidationError(
                {"user_name": _("Slurm needs the user the token was issued for.")}
            )


class SchedulerAccountMapping(models.Model):
    """Which tenant a scheduler account (Slurm ``--account``) belongs to, per cluster. A job
    whose account has no mapping is refused and counted by the sync, never guessed."""

    cluster = models.ForeignKey(
        "inventory.Cluster", on_delete=models.CASCADE, related_name="scheduler_accounts"
    )
    account = models.CharField(_("scheduler account"), max_length=100)
    tenant = models.ForeignKey(
        "monitoring.Tenant", on_delete=models.CASCADE, related_name="scheduler_accounts"
    )

    class Meta:
        ordering = ["cluster__name", "account"]
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "account"], name="scheduling_one_tenant_per_account"
            )
        ]
        verbose_name = _("scheduler account mapping")
        verbose_name_plural = _("scheduler account mappings")

    def __str__(self) -> str:
        return f"{self.cluster}/{self.account} → {self.tenant}"

    def clean(self) -> None:
        super().clean()
        if self.account != self.account.strip() or not self.account:
            raise ValidationError({"account": _("An account name without surrounding spaces.")})


class SchedulerJob(models.Model):
    """One scheduler job as last reported. ``allocation`` lists, per node in the scheduler's
    order, the cards it holds with their GRES indices (``[{"node": "gpu-001", "cards":
    [{"name": "gpu", "type": "h100", "indices": [0, 1]}]}]``), from ``gres_detail``; empty
    until the job runs. ``gpus``/``npus`` count the cards allocated when running, else
    requested, whichever way the request was made (``--gres``/``--gpus-per-node`` per node,
    ``--gpus`` per job)."""

    source = models.ForeignKey(SchedulerSource, on_delete=models.CASCADE, related_name="jobs")
    tenant = models.ForeignKey(
        "monitoring.Tenant", on_delete=models.PROTECT, related_name="scheduler_jobs"
    )
    job_id = models.PositiveBigIntegerField(_("job id"))
    name = models.CharField(_("name"), max_length=200, blank=True)
    account = models.CharField(_("account"), max_length=100)
    user_name = models.CharField(_("user"), max_length=100, blank=True)
    partition = models.CharField(_("partition"), max_length=100, blank=True)
    state = models.CharField(_("state"), max_length=40)
    state_reason = models.CharField(_("state reason"), max_length=200, blank=True)
    nodes = models.JSONField(_("nodes"), default=list, blank=True)
    allocation = models.JSONField(_("cards per node"), default=list, blank=True)
    gpus = models.PositiveIntegerField(_("GPUs"), default=0)
    npus = models.PositiveIntegerField(_("NPUs"), default=0)
    submit_time = models.DateTimeField(_("submitted"), null=True, blank=True)
    start_time = models.DateTimeField(_("started"), null=True, blank=True)
    end_time = models.DateTimeField(_("ended"), null=True, blank=True)
    # A pending job's start as the scheduler estimates it (v0.0.38 answers it as the pending
    # job's ``start_time``); empty once the job starts or when the scheduler has no estimate.
    estimated_start = models.DateTimeField(_("estimated start"), null=True, blank=True)
    # The sync that last changed this row (an unchanged job is not rewritten: a sync of
    # 20,000 jobs writes only those that moved); the source's own last sync says when the
    # scheduler last answered.
    synced_at = models.DateTimeField(_("last changed by a sync at"))

    class Meta:
        ordering = ["source", "-job_id"]
        constraints = [
            models.UniqueConstraint(fields=["source", "job_id"], name="scheduling_one_row_per_job")
        ]
        indexes = [models.Index(fields=["tenant", "state"])]
        verbose_name = _("scheduler job")
        verbose_name_plural = _("scheduler jobs")

    def __str__(self) -> str:
        return f"{self.source.cluster}#{self.job_id}"


class SchedulerNode(models.Model):
    """A compute node as the scheduler last reported it (state, configured and used GRES)."""

    source = models.ForeignKey(SchedulerSource, on_delete=models.CASCADE, related_name="nodes")
    name = models.CharField(_("name"), max_length=200)
    state = models.CharField(_("state"), max_length=60)
    gres = models.CharField(_("GRES"), max_length=500, blank=True)
    gres_used = models.CharField(_("GRES in use"), max_length=500, blank=True)
    partitions = models.JSONField(_("partitions"), default=list, blank=True)
    reason = models.CharField(_("reason"), max_length=500, blank=True)

    class Meta:
        ordering = ["source", "name"]
        constraints = [
            models.UniqueConstraint(fields=["source", "name"], name="scheduling_one_row_per_node")
        ]
        verbose_name = _("scheduler node")
        verbose_name_plural = _("scheduler nodes")

    def __str__(self) -> str:
        return self.name


class SchedulerPartition(models.Model):
    """A partition (queue) as the scheduler last reported it, with its nodes."""

    source = models.ForeignKey(SchedulerSource, on_delete=models.CASCADE, related_name="partitions")
    name = models.CharField(_("name"), max_length=200)
    state = models.CharField(_("state"), max_length=60, blank=True)
    nodes = models.JSONField(_("nodes"), default=list, blank=True)

    class Meta:
        ordering = ["source", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["source", "name"], name="scheduling_one_row_per_partition"
            )
        ]
        verbose_name = _("scheduler partition")
        verbose_name_plural = _("scheduler partitions")

    def __str__(self) -> str:
        return self.name


class SchedulerQuota(models.Model):
    """A card quota as the scheduler last reported it, beside which the portal shows use.

    ``scope`` says what it limits: a *queue* (a Kueue ClusterQueue's ``nominalQuota`` summed
    over its flavours, or a Volcano Queue's ``capability``) or an *account* (a Slurm
    association's ``GrpTRES`` for ``gres/gpu`` / ``gres/npu``, read from slurmdb; ``partition``
    is the association's partition, empty for all). A limit that is ``None`` is not set for
    that card kind (no limit), which is not the same as 0. ``reported_*`` is the use the
    scheduler itself counts against the quota (Kueue ``flavorsUsage``, Volcano
    ``status.allocated``); Slurm's association answer carries none."""

    class Scope(models.TextChoices):
        QUEUE = "queue", _("queue")
        ACCOUNT = "account", _("account")

    class Origin(models.TextChoices):
        KUEUE = "kueue", _("Kueue ClusterQueue nominal quota")
        VOLCANO = "volcano", _("Volcano queue capability")
        SLURM = "slurm", _("Slurm association GrpTRES")

    source = models.ForeignKey(SchedulerSource, on_delete=models.CASCADE, related_name="quotas")
    scope = models.CharField(_("scope"), max_length=10, choices=Scope.choices)
    name = models.CharField(_("queue or account"), max_length=200)
    partition = models.CharField(_("partition"), max_length=200, blank=True)
    origin = models.CharField(_("from"), max_length=10, choices=Origin.choices)
    gpus = models.PositiveIntegerField(_("GPU quota"), null=True, blank=True)
    npus = models.PositiveIntegerField(_("NPU quota"), null=True, blank=True)
    gpus_borrowing_limit = models.PositiveIntegerField(
        _("GPUs it may borrow"), null=True, blank=True
    )
    npus_borrowing_limit = models.PositiveIntegerField(
        _("NPUs it may borrow"), null=True, blank=True
    )
    reported_gpus = models.PositiveIntegerField(_("GPUs in use (scheduler)"), null=True, blank=True)
    reported_npus = models.PositiveIntegerField(_("NPUs in use (scheduler)"), null=True, blank=True)

    class Meta:
        ordering = ["source", "scope", "name", "partition"]
        constraints = [
            models.UniqueConstraint(
                fields=["source", "scope", "name", "partition"], name="scheduling_one_row_per_quota"
            )
        ]
        verbose_name = _("scheduler quota")
        verbose_name_plural = _("scheduler quotas")

    def __str__(self) -> str:
        return f"{self.name}@{self.partition}" if self.partition else self.name


# The day/night window calendar's models live in their own module (kept under ~500 lines).
from scheduling.models_calendar import (  # noqa: E402, F401
    CalendarApplication,
    CalendarAuditEntry,
    CalendarRevision,
    WindowCalendar,
)
