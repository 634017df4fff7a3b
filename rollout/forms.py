"""The "New migration plan" form: tenant → clusters → workloads, steps, analysis, approvals.

Workloads are listed as ``tenant / cluster / workload`` (pilot: non-core, gray: core) so the
same name on several clusters is never ambiguous; the model's rules (tenant, source cluster,
pilot non-core) still decide and name the offending workload.
"""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from accounts.models import Tenant
from inventory.models import Cluster, Workload
from rollout.models.plans import validate_gray_steps
from rollout.services.authoring import DEFAULT_COUNT, DEFAULT_INTERVAL_SECONDS


class WorkloadChoice(forms.ModelMultipleChoiceField):
    def label_from_instance(self, obj: Workload) -> str:
        return f"{obj.tenant.name} / {obj.cluster.name} / {obj.name}"


def _workloads(criticality: str):
    return (
        Workload.objects.filter(criticality=criticality)
        .exclude(cluster__kind=Cluster.Kind.UNIFIED)
        .select_related("tenant", "cluster")
        .order_by("tenant__name", "cluster__name", "name")
    )


class PlanAuthorForm(forms.Form):
    tenant = forms.ModelChoiceField(Tenant.objects.order_by("name"), label=_("Tenant"))
    name = forms.CharField(label=_("Name"), max_length=200)
    source_cluster = forms.ModelChoiceField(
        Cluster.objects.exclude(kind=Cluster.Kind.UNIFIED).order_by("name"),
        label=_("Source cluster (legacy or split)"),
    )
    target_cluster = forms.ModelChoiceField(
        Cluster.objects.filter(kind=Cluster.Kind.UNIFIED).order_by("name"),
        label=_("Target cluster (unified)"),
    )
    pilot = WorkloadChoice(
        _workloads("non_core"),
        required=False,
        label=_("Pilot workloads (non-core)"),
        widget=forms.SelectMultiple(attrs={"size": 10}),
    )
    gray = WorkloadChoice(
        _workloads("core"),
        required=False,
        label=_("Gray workloads (core)"),
        widget=forms.SelectMultiple(attrs={"size": 10}),
    )
    gray_steps = forms.CharField(
        label=_("Gray traffic steps (%)"),
        initial="5, 25, 50, 100",
        help_text=_("Whole percentages, increasing, ending at 100."),
    )
    interval_seconds = forms.IntegerField(
        label=_("Analysis interval (s)"), min_value=5, initial=DEFAULT_INTERVAL_SECONDS
    )
    count = forms.IntegerField(
        label=_("Measurements per gate"), min_value=1, max_value=1000, initial=DEFAULT_COUNT
    )
    required_approvals = forms.IntegerField(
        label=_("Approvals required per gate"), min_value=1, max_value=10, initial=2
    )

    def clean_gray_steps(self) -> list[int]:
        raw = self.cleaned_data["gray_steps"]
        try:
            steps = [int(part) for part in raw.replace("→", ",").split(",") if part.strip()]
        except ValueError as exc:
            raise forms.ValidationError(_("Give whole percentages separated by commas.")) from exc
        validate_gray_steps(steps)
        return steps

    def clean(self):
        data = super().clean()
        if not data.get("pilot") and not data.get("gray"):
            raise forms.ValidationError(_("Choose at least one workload to move."))
        return data
