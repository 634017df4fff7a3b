"""Forms of the twin control page; validation is the engine's (scenario) and the model's."""

from __future__ import annotations

from django import forms
from django.core.validators import MaxValueValidator, MinValueValidator
from django.utils.translation import gettext_lazy as _

from accounts.models import Tenant
from inventory.models import Cluster
from simulation.engine import HARDWARE, default_scenario
from simulation.models import TwinRun
from simulation.services.runs import SANDBOX_TENANT_SLUG


class TwinRunCreateForm(forms.Form):
    name = forms.SlugField(label=_("Cluster name"), max_length=60)
    cards = forms.IntegerField(
        label=_("Cards"),
        initial=2048,
        validators=[MinValueValidator(64), MaxValueValidator(102400)],
    )
    hardware = forms.ChoiceField(
        label=_("Accelerator"),
        choices=[(k, v.name) for k, v in HARDWARE.items()],
        initial="ascend-950dt",
    )
    policy = forms.ChoiceField(
        label=_("Scheduling policy"),
        choices=[("unified", _("unified (one pool)")), ("split", _("split (two pools)"))],
    )
    seed = forms.IntegerField(label=_("Random seed"), initial=7, min_value=0)
    tenant = forms.ModelChoiceField(
        label=_("Tenant of its workloads"),
        queryset=Tenant.objects.exclude(slug=SANDBOX_TENANT_SLUG).order_by("slug"),
        required=False,
        to_field_name="slug",
        empty_label=_("sandbox (test run: no customer sees or pays for it)"),
        help_text=_("Choose a real tenant only on purpose: its users see and are billed for it."),
    )
    default_for_pages = forms.BooleanField(
        label=_("Default cluster of the pages"),
        required=False,
        help_text=_("Overview, hardware, memory, network, report and cost open on this run."),
    )

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        if Cluster.objects.filter(name=name).exists() or TwinRun.objects.filter(name=name).exists():
            raise forms.ValidationError(_("A cluster with this name already exists."))
        return name

    def clean(self) -> dict:
        data = super().clean()
        if self.errors:
            return data
        try:
            data["scenario"] = default_scenario(
                cards=data["cards"],
                seed=data["seed"],
                hardware=data["hardware"],
                policy=data["policy"],
            )
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from exc
        return data


class TwinRunSpeedForm(forms.Form):
    steps_per_tick = forms.IntegerField(
        label=_("Simulated minutes per tick"), min_value=1, max_value=60
    )
