"""The digital twin's router: the share is what the twin reads from the plan (no wire)."""

from __future__ import annotations

from rollout.routers.base import Confirmation, Desired, Router, share_checked


class TwinRouter(Router):
    """Today's behaviour: the twin reads ``PlanWorkload.share`` each tick, so the share asked
    is the share in force once the transition commits."""

    label = "twin"

    def __init__(self) -> None:
        self._share = 0.0

    def set_share(self, desired: Desired) -> Confirmation:
        self._share = share_checked(desired.share)
        return Confirmation(share=self._share, answer="twin")

    def read_share(self) -> float:
        return self._share
