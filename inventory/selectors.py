"""Reads about the inventory other apps share: which cluster a page opens on."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from inventory.models import Cluster

T = TypeVar("T")


def defaults_first(items: Iterable[T], *, cluster: Callable[[T], Cluster] = lambda i: i) -> list[T]:
    """``items`` in the order default picks take them: clusters an operator marked "default for
    pages" first, then by name — with nothing marked, today's rule (first by name).

    ``cluster(item)`` gives an item's :class:`Cluster` (items may be rows about clusters).
    """
    return sorted(items, key=lambda i: (not cluster(i).default_for_pages, cluster(i).name))


def default_cluster(*, unified: bool | None = True) -> Cluster | None:
    """The cluster a page opens on: ``unified=True`` the unified side, ``False`` the
    split/legacy baseline, ``None`` any kind."""
    clusters = Cluster.objects.select_related("hardware_model")
    if unified is True:
        clusters = clusters.filter(kind=Cluster.Kind.UNIFIED)
    elif unified is False:
        clusters = clusters.exclude(kind=Cluster.Kind.UNIFIED)
    ordered = defaults_first(clusters)
    return ordered[0] if ordered else None
