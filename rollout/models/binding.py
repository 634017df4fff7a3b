"""Workload identities for plans and criteria: ids, never names.

Workload names are unique per cluster only: the demo's unified cluster holds another
tenant's finished ``train-0204`` beside the legacy cluster's ``train-0204`` a plan moves.
A gate that measured "the workload called train-0204 on the target" measured someone else's
job. So a plan workload knows its counterpart on the target (``PlanWorkload.target_workload``)
and a criterion the workload it measures (``Criterion.workload``) and, when relative, the one
whose pre-move window is its baseline (``Criterion.baseline_workload``), all by id. A name is
resolved once, when the plan or criterion is authored, and refused when it does not identify
one of the plan's tenant's workloads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext as _

if TYPE_CHECKING:
    from inventory.models import Workload

# ``criterion`` below is a ``rollout.models.Criterion`` (not imported: gates imports this).


def target_counterpart(
    *, workload: Workload, target_cluster_id: int, tenant_id: int
) -> Workload | None:
    """``workload``'s identity on the target cluster: the same tenant's workload of the same
    name there, or ``None`` when the target has none yet.

    Raises ``ValidationError`` when the target's workload of that name belongs to another
    tenant: the name is then ambiguous, and moving traffic or measuring by it would touch
    someone else's workload.
    """
    from inventory.models import Workload

    found = (
        Workload.objects.filter(cluster_id=target_cluster_id, name=workload.name)
        .select_related("cluster")
        .first()
    )
    if found is None:
        return None
    if found.tenant_id != tenant_id:
        raise ValidationError(
            {
                "workload": _(
                    "%(name)s is ambiguous: the target cluster %(cluster)s has another "
                    "tenant's workload of the same name, so the name does not identify "
                    "this plan's workload there."
                )
                % {"name": workload.name, "cluster": found.cluster.name}
            }
        )
    return found


def _by_name(criterion: models.Model, plan: models.Model) -> Workload:
    from inventory.models import Workload

    name = criterion.entity_key
    found = Workload.objects.filter(cluster_id=plan.target_cluster_id, name=name).first()
    if found is None:
        raise ValidationError(
            {
                "entity_key": _(
                    "No workload %(name)s on the target cluster %(cluster)s: a criterion "
                    "measures a workload that exists there."
                )
                % {"name": name, "cluster": plan.target_cluster.name}
            }
        )
    if found.tenant_id != plan.tenant_id:
        raise ValidationError(
            {
                "entity_key": _(
                    "%(name)s is ambiguous: on the target cluster %(cluster)s that name is "
                    "another tenant's workload. Choose the workload by its id."
                )
                % {"name": name, "cluster": plan.target_cluster.name}
            }
        )
    return found


def _baseline_of(plan: models.Model, workload: Workload) -> Workload | None:
    """The source workload the plan moves onto ``workload`` (its pre-move self)."""
    item = plan.workloads.filter(target_workload=workload).select_related("workload").first()
    return item.workload if item is not None else None


def criterion_bind(criterion: models.Model) -> None:
    """Resolve and check the criterion's workload identities (called by ``clean()``).

    Raises ``ValidationError`` naming the field when the workload is not the plan's tenant's,
    not on the target cluster, or a relative criterion has no baseline on the source.
    """
    plan = criterion.phase.plan
    if criterion.entity_kind != "workload":
        criterion.workload = None
        criterion.baseline_workload = None
        return
    if criterion.workload_id is None:
        criterion.workload = _by_name(criterion, plan)
    workload = criterion.workload
    if workload.tenant_id != plan.tenant_id:
        raise ValidationError({"workload": _("The workload belongs to another tenant.")})
    if workload.cluster_id != plan.target_cluster_id:
        raise ValidationError(
            {
                "workload": _(
                    "%(name)s runs on %(cluster)s: a criterion measures a workload on the "
                    "plan's target cluster."
                )
                % {"name": workload.name, "cluster": workload.cluster.name}
            }
        )
    criterion.entity_key = workload.name
    if not criterion.compare_to_baseline:
        criterion.baseline_workload = None
        return
    if criterion.baseline_workload_id is None:
        criterion.baseline_workload = _baseline_of(plan, workload)
    baseline = criterion.baseline_workload
    if baseline is None:
        raise ValidationError(
            {
                "baseline_workload": _(
                    "A relative criterion needs its baseline: %(name)s is not a workload this "
                    "plan moves, so name the source-cluster workload to compare with."
                )
                % {"name": workload.name}
            }
        )
    if baseline.tenant_id != plan.tenant_id or baseline.cluster_id != plan.source_cluster_id:
        raise ValidationError(
            {
                "baseline_workload": _(
                    "The baseline is one of the plan's tenant's workloads on the source cluster."
                )
            }
        )
