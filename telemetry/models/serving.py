"""Which serving endpoints a workload is: the explicit mapping gates and plan pages read."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext_lazy as _


class ServingBinding(models.Model):
    """Binds serving-engine series (``telemetry.ingest.serving``) to an inference workload.

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
        help_text=_("host:port or namespace/pod; empty: every replica of the model."),
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
        if "@" in self.model_name:
            raise ValidationError({"model_name": _("A model name cannot contain '@'.")})

    @property
    def key_prefix(self) -> str:
        """The endpoint keys this binding names start with this (or equal it, with an
        instance)."""
        return f"{self.model_name}@{self.instance}" if self.instance else f"{self.model_name}@"
