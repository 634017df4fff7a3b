"""HAProxy through its Runtime API (the stats socket at ``level admin``).

The target's share is a weight ratio between two servers of one backend: for a share of
``p`` percent the target server gets weight ``p`` and the source server ``100 − p`` (HAProxy
weights are 0–256; both are set in one command line, so there is no instant where both are
0 or both carry full weight). Before setting, ``show servers state <backend>`` must list
both servers (an unknown backend or server is refused by name and nothing is set); after
setting, the same command is read again and the share confirmed is
``target / (source + target)`` of the weights HAProxy reports (``srv_uweight``).
In-flight requests are not touched by a weight change: HAProxy only routes new ones by it.

**Weights are not a split**: :meth:`HAProxyRouter.counters` reads the servers' own cumulative
counters (``show stat``, :mod:`rollout.routers.haproxy_stats`), from which the split actually
served and the router's own errors are computed over a window. A restore to share 0 is
confirmed by the weights *and* by the target receiving no new request over a short window.
"""

from __future__ import annotations

import time

from cluster_portal.web.outbound import OutboundRefused, OutboundTimeout, socket_exchange
from rollout.routers.base import ANSWER_CHARS, Confirmation, Desired, Router, RouterError
from rollout.routers.base import share_checked as _checked
from rollout.routers.haproxy_stats import servers_counters

WEIGHT_SCALE = 100
MAX_ANSWER = 256 * 1024
# A restore to 0 is confirmed only if the target got no new request for this long (bounded
# by the router's deadline): a weight of 0 that still receives traffic is not a rollback.
RESTORE_QUIET_SECONDS = 1.0


class HAProxyRouter(Router):
    """One backend's source/target server pair on one HAProxy."""

    label = "haproxy"

    def __init__(
        self,
        *,
        address: str,
        backend: str,
        source_server: str,
        target_server: str,
        deadline_seconds: float = 5.0,
    ) -> None:
        self.address, self.backend = address, backend
        self.source, self.target = source_server, target_server
        self.deadline_seconds = deadline_seconds

    def _command(self, line: str) -> str:
        try:
            raw = socket_exchange(
                self.address,
                line.encode() + b"\n",
                deadline_seconds=self.deadline_seconds,
                max_bytes=MAX_ANSWER,
            )
        except OutboundTimeout:
            raise RouterError(
                "timeout", f"HAProxy gave no answer within {self.deadline_seconds:g} s"
            ) from None
        except OutboundRefused:
            raise RouterError("unreachable", "refused by the outbound policy") from None
        except ValueError as exc:  # ResponseTooLarge
            raise RouterError("garbage", str(exc)) from None
        except OSError as exc:
            why = exc.strerror or type(exc).__name__
            raise RouterError("unreachable", f"HAProxy at {self.address}: {why}") from None
        try:
            return raw.decode()
        except UnicodeDecodeError:
            raise RouterError("garbage", "HAProxy's answer is not text") from None

    def weights(self) -> dict[str, int]:
        """Each server of the backend → its current weight, from ``show servers state``."""
        answer = self._command(f"show servers state {self.backend}")
        lines = [line for line in answer.splitlines() if line.strip()]
        header = next((line for line in lines if line.startswith("# ")), None)
        if header is None:
            text = answer.strip()[:ANSWER_CHARS] or "(empty)"
            if "backend" in text.lower():
                raise RouterError("unknown_name", f"backend {self.backend!r}: {text}")
            raise RouterError("garbage", f"show servers state answered: {text}")
        columns = header[2:].split()
        try:
            be, name, weight = (columns.index(c) for c in ("be_name", "srv_name", "srv_uweight"))
        except ValueError:
            raise RouterError("garbage", f"unexpected columns: {header[:200]}") from None
        found: dict[str, int] = {}
        for line in lines:
            if line.startswith("#") or line.strip().isdigit():
                continue
            cells = line.split()
            try:
                if cells[be] == self.backend:
                    found[cells[name]] = int(cells[weight])
            except (IndexError, ValueError):
                raise RouterError("garbage", f"unreadable server line: {line[:200]}") from None
        if not found:
            raise RouterError("unknown_name", f"backend {self.backend!r} has no servers")
        return found

    def _known(self) -> dict[str, int]:
        weights = self.weights()
        missing = [s for s in (self.source, self.target) if s not in weights]
        if missing:
            raise RouterError(
                "unknown_name",
                f"no server {', '.join(map(repr, missing))} in backend {self.backend!r} "
                f"(it has {', '.join(sorted(weights))})",
            )
        return weights

    def _share_of(self, weights: dict[str, int]) -> float:
        source, target = weights[self.source], weights[self.target]
        if source + target <= 0:
            raise RouterError("mismatch", "both servers are at weight 0: nothing is served")
        return 100.0 * target / (source + target)

    def set_share(self, desired: Desired) -> Confirmation:
        share = _checked(desired.share)
        self._known()  # unknown names: refused before anything is set
        target = round(share * WEIGHT_SCALE / 100)
        source = WEIGHT_SCALE - target
        line = (
            f"set server {self.backend}/{self.source} weight {source}; "
            f"set server {self.backend}/{self.target} weight {target}"
        )
        answer = self._command(line).strip()
        if answer:  # HAProxy answers an accepted "set server … weight" with an empty line
            raise RouterError("refused", f"HAProxy: {answer}")
        weights = self._known()
        read = self._share_of(weights)
        return Confirmation(
            share=read,
            answer=(
                f"weights {self.source}={weights[self.source]} {self.target}={weights[self.target]}"
            ),
        )

    def read_share(self) -> float:
        return self._share_of(self._known())

    def counters(self) -> dict[str, dict[str, int]]:
        """The source's and target's cumulative counters: ``{"source": {...}, "target": {...}}``
        (``requests``, ``errors``, ``retries``; see :mod:`rollout.routers.haproxy_stats`)."""
        found = servers_counters(self._command(f"show stat {self.backend} 4 -1"), self.backend)
        missing = [s for s in (self.source, self.target) if s not in found]
        if missing:
            raise RouterError(
                "unknown_name",
                f"show stat lists no server {', '.join(map(repr, missing))} "
                f"in backend {self.backend!r}",
            )
        return {"source": found[self.source], "target": found[self.target]}

    def restore(self, desired: Desired) -> Confirmation:
        confirmation = self.set_share(desired)
        if desired.share > 0:
            return confirmation
        before = self.counters()["target"]["requests"]
        time.sleep(min(RESTORE_QUIET_SECONDS, self.deadline_seconds / 2))
        after = self.counters()["target"]["requests"]
        if after > before:
            raise RouterError(
                "mismatch",
                f"{confirmation.answer}, yet {self.target} received {after - before} new "
                "request(s) after its weight went to 0",
            )
        return Confirmation(
            share=confirmation.share,
            answer=f"{confirmation.answer}; no new request on {self.target}",
        )
