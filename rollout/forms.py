"""The "New migration plan" form: tenant → clusters → workloads, steps, analysis, approvals.

The workload lists hold only what the chosen tenant runs on the chosen source cluster and
has not finished (``rollout.selectors.workloads_movable``; pilot: non-core, gray: core) —
nothing until both are chosen; a posted workload outside them is "not a valid choice". The
model's rules (tenant, source cluster, pilot non-core, an ambiguous name on the target)
still decide and name the offending workload.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django import forms
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from accounts.models import Tenant
from inventory.models import Cluster, Workload
from rollout.models import Criterion, MigrationPlan, Phase, PlanState
from rollout.models.plans import validate_gray_steps
from rollout.selectors import workloads_movable
from rollout.services.authoring import DEFAULT_COUNT, analysis_defaults


class WorkloadChoice(forms.ModelMultipleChoiceField):
    """A workload listed by name and kind (tenant and cluster are chosen above it)."""

    def label_from_instance(self, obj: Workload) -> str:
        return f"{obj.name} ({obj.get_kind_display()})"


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
        Workload.objects.none(),
        required=False,
        label=_("Pilot workloads (non-core)"),
        widget=forms.SelectMultiple(attrs={"size": 10}),
    )
    gray = WorkloadChoice(
        Workload.objects.none(),
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
        label=_("Analysis interval (s)"),
        min_value=5,
        initial=lambda: analysis_defaults().interval_seconds,
        help_text=_("Default: two telemetry intervals."),
    )
    count = forms.IntegerField(
        label=_("Measurements per gate"), min_value=1, max_value=1000, initial=DEFAULT_COUNT
    )
    required_approvals = forms.IntegerField(
        label=_("Approvals required per gate"), min_value=1, max_value=10, initial=2
    )
    manual_empty_phases = forms.BooleanField(
        label=_("A phase left without workloads becomes a manual gate (approvers decide)"),
        required=False,
        help_text=_("Without this, a plan with an empty pilot or gray phase is refused."),
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        tenant = self._chosen("tenant")
        source = self._chosen("source_cluster")
        self.workloads_listed = tenant is not None and source is not None
        if self.workloads_listed:
            movable = workloads_movable(tenant_id=tenant.pk, cluster_id=source.pk)
            self.fields["pilot"].queryset = movable.filter(criticality="non_core")
            self.fields["gray"].queryset = movable.filter(criticality="core")

    def _chosen(self, name: str):
        """The tenant or source cluster chosen so far (posted, or the page's query)."""
        raw = self.data.get(name) if self.is_bound else self.initial.get(name)
        field = self.fields[name]
        try:
            return field.clean(raw) if raw not in (None, "") else None
        except forms.ValidationError:
            return None

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
        empty = [name for name in ("pilot", "gray") if not data.get(name)]
        if empty and not data.get("manual_empty_phases"):
            # A phase without workloads has nothing to measure: refused unless the operator
            # consents here to an explicit (audited) manual gate for it.
            raise forms.ValidationError(
                _(
                    "The %(phases)s phase has no workloads: choose some, or tick the box to make "
                    "it a manual gate."
                )
                % {"phases": ", ".join(empty)}
            )
        return data


class _WorkloadById(forms.ModelChoiceField):
    """A workload shown with its id: names repeat across clusters and tenants."""

    def label_from_instance(self, obj: Workload) -> str:
        return f"{obj.name} #{obj.pk}"


class _PhaseChoice(forms.ModelChoiceField):
    def label_from_instance(self, obj: Phase) -> str:
        return str(obj.get_kind_display())


class CriterionForm(forms.ModelForm):
    """One gate criterion of a plan, edited on the plan's page (saved by ``criterion_save``,
    like the admin and the API; the model's ``clean()`` binds and checks the workloads).

    Workloads are the plan's tenant's: on the target cluster (measured) and on the source
    (the baseline of a relative criterion, by default the one the plan moves there).
    """

    ENTITY_KINDS = (("workload", _("workload")), ("cluster", _("cluster")))

    entity_kind = forms.ChoiceField(label=_("entity kind"), choices=ENTITY_KINDS)

    class Meta:
        model = Criterion
        fields = [
            "phase",
            "name",
            "metric",
            "entity_kind",
            "workload",
            "entity_key",
            "aggregation",
            "comparator",
            "threshold",
            "compare_to_baseline",
            "baseline_workload",
            "baseline_window",
            "window_seconds",
            "min_samples",
            "initial_delay_seconds",
            "count",
            "interval_seconds",
            "failure_limit",
            "inconclusive_limit",
            "dry_run",
        ]
        labels = {"phase": _("phase")}
        field_classes = {
            "workload": _WorkloadById,
            "baseline_workload": _WorkloadById,
            "phase": _PhaseChoice,
        }

    def __init__(self, *args, plan: MigrationPlan, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["phase"].queryset = plan.phases.all()
        mine = Workload.objects.filter(tenant_id=plan.tenant_id).order_by("name")
        self.fields["workload"].queryset = mine.filter(cluster_id=plan.target_cluster_id)
        self.fields["baseline_workload"].queryset = mine.filter(cluster_id=plan.source_cluster_id)
        self.fields["entity_key"].required = False
        # A form posted without it (an older page, a script) keeps what the criterion has.
        self.fields["baseline_window"].required = False
        if self.instance.pk is None and not self.is_bound:
            derived = analysis_defaults()
            for name in (
                "window_seconds",
                "min_samples",
                "initial_delay_seconds",
                "interval_seconds",
                "inconclusive_limit",
                "count",
            ):
                self.initial.setdefault(name, getattr(derived, name))

    def clean_baseline_window(self) -> str:
        return self.cleaned_data.get("baseline_window") or self.instance.baseline_window


class PlanListForm(forms.Form):
    """``?state=&tenant=&cluster=&name=`` of the migration list; a bad value is a 400 naming the
    field (an unknown tenant or cluster too, rather than an empty list)."""

    state = forms.ChoiceField(
        label=_("State"), required=False, choices=[("", _("all"))] + list(PlanState.choices)
    )
    tenant = forms.ChoiceField(label=_("Tenant"), required=False)
    cluster = forms.ChoiceField(label=_("Cluster"), required=False)
    name = forms.CharField(label=_("Name contains"), required=False, max_length=120)

    def __init__(self, data, *, user) -> None:
        super().__init__(data)
        self.shows_tenant = bool(getattr(user, "sees_all_tenants", False))
        tenants = Tenant.objects.order_by("slug")
        if not self.shows_tenant:
            tenants = tenants.filter(pk=getattr(user, "tenant_id", None))
        self.fields["tenant"].choices = [("", _("all"))] + [(t.slug, t.name) for t in tenants]
        self.fields["cluster"].choices = [("", _("all"))] + [
            (name, name) for name in Cluster.objects.order_by("name").values_list("name", flat=True)
        ]

    def filter(self, plans):
        """``plans`` narrowed by the validated filters (call after ``is_valid()``); a cluster
        matches either end of a plan."""
        data = self.cleaned_data
        if data.get("state"):
            plans = plans.filter(state=data["state"])
        if data.get("tenant"):
            plans = plans.filter(tenant__slug=data["tenant"])
        if data.get("cluster"):
            plans = plans.filter(
                Q(source_cluster__name=data["cluster"]) | Q(target_cluster__name=data["cluster"])
            )
        if (data.get("name") or "").strip():
            plans = plans.filter(name__icontains=data["name"].strip())
        return plans

    def query_string(self) -> str:
        """The active filters as a query string, for the pager's links."""
        return urlencode({key: value for key, value in self.cleaned_data.items() if value})
