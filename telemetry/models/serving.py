"""Which serving endpoints a workload is: the explicit mapping gates and plan pages read."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext_lazy as _

from telemetry.models.vouching import VouchedEvidence


def _has_control(text: str) -> bool:
    return any(ord(c) < 32 or ord(c) == 127 for c in text)


class ServingBinding(VouchedEvidence):
    """Binds serving-engine series (``telemetry.families.serving``) to an inference workload.

    The workload is the endpoints on its cluster whose ``model_name`` is ``model_name`` and,
    when ``instance`` is set, whose instance (``host:port``) or pod (``namespace/pod``) is that
    one: the endpoint entity keyed ``<model_name>@<instance>``. An empty ``instance`` takes
    every replica of the model. On a cluster read through a PromQL data source the same two
    fields become the label matchers ``model_name="…"`` and ``instance="…"`` (or ``pod``).
    """

    workload = models.ForeignKey(
        "inventory.Workload",
        verbose_name=_("workload"),
        on_delete=models.CASCADE,
        related_name="serving_bindings",
    )
    model_name = models.CharField(_("model name"), max_length=200)
    instance = models.CharField(
        _("instance or pod"),
        max_length=200,
        blank=True,
        help_text=_(
            "What follows '@' in the endpoint key: namespace/pod when the series carry a pod "
            "label, else their instance label — host:port of the scraped target, which the "
            "portal's scraper and Prometheus set from the target URL — else the node a push "
            "named (node= or a host label). Empty: every replica of the model."
        ),
    )

    class Meta:
        verbose_name = _("serving binding")
        verbose_name_plural = _("serving bindings")
        constraints = [
            models.UniqueConstraint(
                fields=["workload", "model_name", "instance"], name="serving_binding_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.workload_id}: {self.model_name}@{self.instance or '*'}"

    def clean(self) -> None:
        # The endpoint key is ``<model_name>@<instance>`` and both fields become PromQL label
        # values: an '@' in the model, or blanks and control characters anywhere, would name
        # series no engine exports (and a key that parses two ways).
        errors: dict[str, str] = {}
        model = self.model_name or ""
        if "@" in model:
            errors["model_name"] = _("A model name cannot contain '@'.")
        elif model != model.strip() or _has_control(model):
            errors["model_name"] = _(
                "A model name cannot start or end with blanks nor hold control characters."
            )
        where = self.instance or ""
        if where and (any(c.isspace() for c in where) or _has_control(where) or "@" in where):
            errors["instance"] = _(
                "An instance or pod cannot hold blanks, '@' or control characters."
            )
        elif where.count("/") > 1 or where.startswith("/") or where.endswith("/"):
            errors["instance"] = _("A pod is namespace/pod (one '/', both parts named).")
        workload = getattr(self, "workload", None) if self.workload_id else None
        if workload is not None and workload.kind != workload.Kind.INFERENCE:
            errors["workload"] = _("Only an inference workload has serving endpoints.")
        if errors:
            raise ValidationError(errors)

    @property
    def key_prefix(self) -> str:
        """The endpoint keys this binding names start with this (or equal it, with an
        instance)."""
        return f"{self.model_name}@{self.instance}" if self.instance else f"{self.model_name}@"
