"""Filter forms of the dashboards' lists: one validation for the page and the API."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from accounts.models import Tenant
from dashboards.selectors.workload_list import STATE_FILTERS, WorkloadListQuery
from inventory.models import Cluster, Workload

# Query parameters the workload list understands besides its filters (the dashboards'
# range picker and CSV export ride along on the same URL).
WORKLOAD_LIST_EXTRA_PARAMS = ("page", "range", "start", "end", "format", "table")


class WorkloadListForm(forms.Form):
    """``?kind=&state=&tenant=&cluster=&name=`` of the workload list; a bad value is a 400
    naming the field (an unknown tenant or cluster too, rather than an empty list)."""

    kind = forms.ChoiceField(
        label=_("Kind"),
        required=False,
        choices=[("", _("all"))] + list(Workload.Kind.choices),
    )
    state = forms.ChoiceField(label=_("State"), required=False, choices=STATE_FILTERS.items())
    tenant = forms.ChoiceField(label=_("Tenant"), required=False)
    cluster = forms.ChoiceField(label=_("Cluster"), required=False)
    name = forms.CharField(label=_("Name contains"), required=False, max_length=120)

    def __init__(self, data, *, user, default_state: str = "all") -> None:
        super().__init__(data)
        self.default_state = default_state
        self.fields["state"].initial = default_state
        sees_all = bool(getattr(user, "sees_all_tenants", False))
        tenants = Tenant.objects.order_by("slug")
        if not sees_all:
            tenants = tenants.filter(pk=getattr(user, "tenant_id", None))
        self.fields["tenant"].choices = [("", _("all"))] + [(t.slug, t.name) for t in tenants]
        self.fields["cluster"].choices = [("", _("all"))] + [
            (name, name) for name in Cluster.objects.order_by("name").values_list("name", flat=True)
        ]
        self.shows_tenant = sees_all

    def query(self) -> WorkloadListQuery:
        """The validated filters (call after ``is_valid()``)."""
        data = self.cleaned_data
        return WorkloadListQuery(
            kind=data.get("kind") or "",
            state=data.get("state") or self.default_state,
            tenant=data.get("tenant") or "",
            cluster=data.get("cluster") or "",
            name=(data.get("name") or "").strip(),
        )
