"""Writes about the inventory other apps share: which cluster pages open on."""

from __future__ import annotations

from django.db import transaction

from inventory.models import Cluster


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
