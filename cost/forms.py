"""The operator's cost-inputs form; validation is the model's (validators, ``clean``)."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from cost.models import CostAssumptions
from cost.selectors import INPUT_FIELDS
from inventory.models import Cluster


class CostAssumptionsForm(forms.ModelForm):
    """Edits one inputs row: the global default (no cluster) or one cluster's override."""

    cluster = forms.ModelChoiceField(
        label=_("Applies to"),
        queryset=Cluster.objects.all(),
        required=False,
        empty_label=_("all clusters (global default)"),
    )

    class Meta:
        model = CostAssumptions
        fields = ("cluster", *INPUT_FIELDS)

    def clean_currency(self) -> str:
        return (self.cleaned_data.get("currency") or "").upper()

    @classmethod
    def bound(cls, data) -> CostAssumptionsForm:
        """Bind ``data`` to the row it edits: the chosen scope's existing row, if any.

        Binding to that row makes uniqueness checks see an update, not a second row.
        """
        raw = data.get("cluster") or None
        instance = None
        if raw is None:
            instance = CostAssumptions.objects.filter(cluster__isnull=True).first()
        elif str(raw).isdigit():
            instance = CostAssumptions.objects.filter(cluster_id=int(raw)).first()
        return cls(data, instance=instance)

    def input_values(self) -> dict:
        return {name: self.cleaned_data[name] for name in INPUT_FIELDS}
