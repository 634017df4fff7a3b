"""Read-only selectors other apps may call (the twin reads traffic shares from here)."""

from __future__ import annotations


def traffic_shares_for_cluster(*, cluster_id: int) -> dict[str, float]:
    """Share (0–1) of each workload's traffic that a gray migration sends to ``cluster_id``.

    Neutral until the migration workflow lands: no plan overrides any workload, so the twin
    keeps each workload's own scenario share.
    """
    return {}
