"""The workload list a person (page) or a script (API) asks for: filtered, stated, paginated.

A fleet lists thousands of workloads, most of them finished training jobs; the page used to
render all of them on one page. The list's filters are one :class:`WorkloadListQuery` (parsed
and validated by :class:`dashboards.forms.WorkloadListForm` for the page and the API alike);
kind, tenant, cluster and name narrow the database query, state is read from each workload's
newest telemetry (``training_state``; an inference service is *serving* while it holds cards).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from dashboards.selectors.workloads import (
    WorkloadColumns,
    workload_columns,
    workloads_visible_to,
)
from inventory.models import Workload

PAGE_SIZE = 50

# A workload's state, from its newest figures. Training: the twin's / exporter's
# training_state (0 not submitted, 1 queued, 2 running, 3 done). Inference: serving while it
# holds cards or replicas, idle otherwise. No figure at all: unknown.
STATE_LABELS = {
    "pending": pgettext_lazy("workload state", "pending"),
    "queued": _("queued"),
    "running": _("running"),
    "finished": _("finished"),
    "serving": _("serving"),
    "idle": _("idle"),
    "unknown": _("no data"),
}
# What the state filter offers: one state, "active" (everything not finished) or "all".
STATE_FILTERS = {"active": _("active (not finished)"), "all": _("all"), **STATE_LABELS}
_TRAINING_STATES = np.array(["pending", "queued", "running", "finished"], dtype=object)


@dataclass(frozen=True)
class WorkloadListQuery:
    """The list's filters; empty strings mean "any"."""

    kind: str = ""
    state: str = "all"
    tenant: str = ""
    cluster: str = ""
    name: str = ""


def workload_states(columns: WorkloadColumns) -> np.ndarray:
    """Each listed workload's state key (aligned with ``columns.workloads``)."""
    n = len(columns.workloads)
    states = np.full(n, "unknown", dtype=object)
    if not n:
        return states
    training = np.array([w.kind == Workload.Kind.TRAINING for w in columns.workloads])
    code = columns.values["training_state"]
    known = training & np.isfinite(code)
    states[known] = _TRAINING_STATES[np.clip(code[known], 0, 3).astype(int)]
    cards = np.nan_to_num(columns.values["workload_allocated_cards"], nan=-1.0)
    replicas = np.nan_to_num(columns.values["inference_replicas"], nan=-1.0)
    seen = np.isfinite(columns.values["workload_allocated_cards"]) | np.isfinite(
        columns.values["inference_replicas"]
    )
    inference = ~training
    states[inference & seen] = "idle"
    states[inference & ((cards > 0) | (replicas > 0))] = "serving"
    return states


def _narrowed(user, query: WorkloadListQuery) -> QuerySet[Workload]:
    workloads = workloads_visible_to(user)
    if query.kind:
        workloads = workloads.filter(kind=query.kind)
    if query.tenant:
        workloads = workloads.filter(tenant__slug=query.tenant)
    if query.cluster:
        workloads = workloads.filter(cluster__name=query.cluster)
    if query.name:
        workloads = workloads.filter(name__icontains=query.name)
    return workloads


@dataclass
class WorkloadList:
    """The filtered list (every matching workload, with states) before paging."""

    columns: WorkloadColumns
    states: np.ndarray

    def __len__(self) -> int:
        return len(self.columns.workloads)

    def page(self, number: int | str | None, size: int = PAGE_SIZE) -> tuple[Page, WorkloadList]:
        """Page ``number`` (clamped to the last page) and the list cut down to its rows."""
        page = Paginator(range(len(self)), size).get_page(number)
        return page, self.take(np.arange(page.start_index() - 1, page.end_index(), dtype=int))

    def take(self, at: np.ndarray) -> WorkloadList:
        if len(self) == 0:
            return self
        at = at[(at >= 0) & (at < len(self))]
        workloads = [self.columns.workloads[i] for i in at.tolist()]
        values = {name: array[at] for name, array in self.columns.values.items()}
        return WorkloadList(WorkloadColumns(workloads, values), self.states[at])


def workload_list(user, query: WorkloadListQuery) -> WorkloadList:
    """The workloads ``user`` may see that match ``query``, newest figures and state each."""
    columns = workload_columns(_narrowed(user, query))
    listed = WorkloadList(columns, workload_states(columns))
    if query.state == "all" or not len(listed):
        return listed
    if query.state == "active":
        keep = listed.states != "finished"
    else:
        keep = listed.states == query.state
    return listed.take(np.flatnonzero(keep))
