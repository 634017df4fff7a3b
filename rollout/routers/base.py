"""The interface every traffic router implements, and the error it raises.

A router moves one workload's traffic between its source and its target: ``set_share`` asks
for the target's share and returns what the router **reads back** afterwards (never the
share asked), ``read_share`` reads it alone, ``restore`` puts the source back (the share a
rollback returns to; 0 means the source takes 100%). A router answers synchronously with a
:class:`Confirmation`, or says it will confirm later (``pending``: a deploy tool's signed
callback). Anything else — a refusal, a timeout, an unreachable router, an answer that cannot
be read, an unknown backend or server — raises :class:`RouterError` with one of the reason
codes of ``rollout.models.RouterOutcome``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

# Bounded: what the audit and the router-call log keep of an answer.
ANSWER_CHARS = 400


@dataclass(frozen=True)
class Desired:
    """The desired state sent to a router (the webhook's JSON body, field for field)."""

    plan_id: int
    plan: str
    step: str
    workload: str
    source: str
    target: str
    share: float  # the target's share, in percent (0–100)
    idempotency_key: str
    operation: str = "set"


@dataclass(frozen=True)
class Confirmation:
    """What the router reported: the target's share in percent after the call, or pending."""

    share: float | None
    answer: str = ""
    pending: bool = False


class RouterError(Exception):
    """A router call that did not confirm: ``code`` is a ``RouterOutcome`` failure."""

    def __init__(self, code: str, detail: str) -> None:
        self.code = code
        self.detail = detail[:ANSWER_CHARS]
        super().__init__(f"{code}: {self.detail}")


class Router(ABC):
    """One workload's traffic switch (see the module docstring for the contract)."""

    label = "router"

    @abstractmethod
    def set_share(self, desired: Desired) -> Confirmation:
        """Ask for ``desired.share`` on the target; return the share read back afterwards."""

    @abstractmethod
    def read_share(self) -> float:
        """The target's share (percent) the router applies now."""

    def counters(self) -> dict[str, dict[str, int]] | None:
        """The source's and target's cumulative served counters (``{"source": {"requests",
        "errors", "retries"}, "target": {...}}``), or ``None``: this router reports none, and
        its weights' read-back is all that confirms a share."""
        return None

    def restore(self, desired: Desired) -> Confirmation:
        """Put the source back (``desired.share`` is what the target keeps, usually 0)."""
        return self.set_share(desired)


def share_checked(share: float) -> float:
    """A share in percent, refused outside 0–100 (a bug upstream must not reach a router)."""
    if not 0.0 <= float(share) <= 100.0:
        raise RouterError("refused", f"share {share!r} is outside 0–100")
    return float(share)
