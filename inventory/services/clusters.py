"""Writes about the inventory other apps share: creating a cluster (the set-up command's
``cluster_ensure``) and which cluster pages open on."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from inventory.models import Cluster, HardwareModel


@transaction.atomic
def cluster_default_set(cluster: Cluster) -> Cluster:
    """Make ``cluster`` the default for pages on its side (unified, or split/legacy baseline);
    the previous default of that side is unmarked. An operator's deliberate act."""
    same_side = Cluster.objects.select_for_update()
    if cluster.kind == Cluster.Kind.UNIFIED:
        same_side = same_side.filter(kind=Cluster.Kind.UNIFIED)
    else:
        same_side = same_side.exclude(kind=Cluster.Kind.UNIFIED)
    list(same_side.order_by("pk"))  # lock the side before changing it
    same_side.exclude(pk=cluster.pk).update(default_for_pages=False)
    Cluster.objects.filter(pk=cluster.pk).update(default_for_pages=True)
    cluster.default_for_pages = True
    return cluster


@dataclass(frozen=True)
class ClusterEnsured:
    """What ``cluster_ensure`` did: the cluster, ``created``/``unchanged``/``updated`` and the
    fields that changed."""

    cluster: Cluster
    outcome: str
    changes: list[str] = field(default_factory=list)


@transaction.atomic
def cluster_ensure(
    *,
    name: str,
    kind: str,
    description: str = "",
    hardware_model: HardwareModel | None = None,
    host_labels: str = "",
    scrape_interval_seconds: int = 15,
    absent_after_intervals: int = 4,
    update: bool = False,
) -> ClusterEnsured:
    """Create the cluster ``name`` (the set-up command's write), or leave it when it already
    matches; an existing cluster that differs is refused, naming each difference, unless
    ``update``. Validated by the model (``ValidationError`` naming the field; nothing written).

    Its topology (supernodes, racks, nodes, cards) comes from the inventory import, exporters
    or a twin run, never from here.
    """
    wanted: dict[str, object] = {
        "kind": kind,
        "description": description,
        "hardware_model": hardware_model,
        "host_labels": host_labels,
        "scrape_interval_seconds": scrape_interval_seconds,
        "absent_after_intervals": absent_after_intervals,
    }
    cluster = Cluster.objects.select_for_update().filter(name=name).first()
    if cluster is None:
        cluster = Cluster(name=name, **wanted)
        cluster.full_clean()
        cluster.save()
        return ClusterEnsured(cluster, "created")
    changes = [
        f"{key}: {getattr(cluster, key)!r} → {value!r}"
        for key, value in wanted.items()
        if getattr(cluster, key) != value
    ]
    if not changes:
        return ClusterEnsured(cluster, "unchanged")
    if not update:
        raise ValidationError(
            _("Cluster %(name)s exists and differs (%(changes)s); pass update to change it.")
            % {"name": name, "changes": "; ".join(changes)},
            code="exists",
        )
    for key, value in wanted.items():
        setattr(cluster, key, value)
    cluster.full_clean()
    cluster.save()
    return ClusterEnsured(cluster, "updated", changes)
