"""A deploy tool's webhook (Argo Rollouts step-plugin style): desired state in, share out.

The portal POSTs the desired state (:class:`rollout.routers.base.Desired` as JSON) signed
like its notifications (:mod:`rollout.services.webhook_signing`): Standard Webhooks headers
(``webhook-id`` = the idempotency key, ``webhook-timestamp``, ``webhook-signature``) and, for
one more release, the deprecated ``X-Portal-Timestamp``/``X-Portal-Signature``; with
``Idempotency-Key`` (also in the body): a retried call carries the same key (and so the same
``webhook-id``), so the tool applies it once. The tool answers:

- ``200`` ``{"status": "confirmed", "share": <percent now in force>}`` — synchronous;
- ``202`` (or ``{"status": "pending"}``) — it will confirm by POSTing
  ``{"idempotency_key", "status": "confirmed"|"refused", "share", "reason"}`` signed with the
  same secret (either way) to the portal's callback endpoint;
- ``{"status": "refused", "reason": "…"}`` or another 4xx — refused, never retried;
- 5xx, 408, 429 or a network error — retried with exponential backoff within the call's
  attempts, each attempt under the router's one wall-clock deadline.

The secret is read from the environment variable the router names; it is never stored. A
``whsec_<base64>`` secret is the base64-decoded key (Standard Webhooks); any other is its UTF-8
bytes.
"""

from __future__ import annotations

import http.client
import json
import os
import time
from dataclasses import asdict

from cluster_portal.web.outbound import (
    OutboundRefused,
    OutboundTimeout,
    ResponseTooLarge,
    outbound_request,
)
from rollout.routers.base import Confirmation, Desired, Router, RouterError, share_checked
from rollout.services.webhook_signing import signature_headers, webhook_secret_problem

MAX_ANSWER = 16 * 1024
BACKOFF_SECONDS = 0.25


def router_secret(secret_ref: str) -> str:
    """The secret a router's reference names; a missing one is a refusal (nothing is sent)."""
    secret = os.environ.get(secret_ref, "")
    if not secret:
        raise RouterError("refused", f"the environment variable {secret_ref} is not set")
    problem = webhook_secret_problem(secret)
    if problem:
        raise RouterError("refused", f"the environment variable {secret_ref}: {problem}")
    return secret


def signed_headers(secret: str, body: bytes, *, key: str) -> dict[str, str]:
    """Both signature header sets; ``webhook-id`` is the idempotency key (stable on retry)."""
    return {
        "Content-Type": "application/json",
        "User-Agent": "cluster-portal-router/1",
        "Idempotency-Key": key,
        **signature_headers(secret=secret, msg_id=key, body=body),
    }


def answer_read(status: int, body: bytes) -> Confirmation:
    """A tool's answer (or a callback's body) as a confirmation; garbage raises."""
    if status == 202 and not body.strip():
        return Confirmation(share=None, answer="HTTP 202", pending=True)
    try:
        data = json.loads(body or b"null")
    except ValueError:
        raise RouterError("garbage", f"HTTP {status}: the answer is not JSON") from None
    if not isinstance(data, dict) or data.get("status") not in ("confirmed", "pending", "refused"):
        raise RouterError("garbage", f"HTTP {status}: no status confirmed/pending/refused")
    said = str(data.get("reason") or "")[:200]
    if data["status"] == "refused":
        raise RouterError("refused", f"HTTP {status}: {said or 'refused'}")
    if data["status"] == "pending" or status == 202:
        return Confirmation(share=None, answer=f"HTTP {status}: pending", pending=True)
    share = data.get("share")
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 <= share <= 100:
        raise RouterError("garbage", f"HTTP {status}: share {share!r} is not 0–100")
    return Confirmation(share=float(share), answer=f"HTTP {status}: confirmed {share:g}%")


class WebhookRouter(Router):
    """A deploy tool that applies the desired state (see the module docstring)."""

    label = "webhook"

    def __init__(
        self, *, url: str, secret_ref: str, deadline_seconds: float = 5.0, max_attempts: int = 3
    ) -> None:
        self.url, self.secret_ref = url, secret_ref
        self.deadline_seconds, self.max_attempts = deadline_seconds, max_attempts
        self._last: float | None = None

    def set_share(self, desired: Desired) -> Confirmation:
        share_checked(desired.share)
        secret = router_secret(self.secret_ref)
        body = json.dumps(asdict(desired), sort_keys=True).encode()
        last = RouterError("unreachable", "no attempt made")
        for attempt in range(1, self.max_attempts + 1):
            if attempt > 1:
                time.sleep(BACKOFF_SECONDS * 2 ** (attempt - 2))
            try:
                answer = outbound_request(
                    self.url,
                    method="POST",
                    data=body,
                    headers=signed_headers(secret, body, key=desired.idempotency_key),
                    deadline_seconds=self.deadline_seconds,
                    max_bytes=MAX_ANSWER,
                )
            except OutboundRefused:
                raise RouterError("unreachable", "refused by the outbound policy") from None
            except OutboundTimeout:
                last = RouterError("timeout", f"no answer within {self.deadline_seconds:g} s")
                continue
            except ResponseTooLarge:
                raise RouterError("garbage", "the answer is too large") from None
            except (OSError, http.client.HTTPException) as exc:
                last = RouterError("unreachable", f"network error: {type(exc).__name__}")
                continue
            if answer.status >= 500 or answer.status in (408, 429):
                last = RouterError("unreachable", f"HTTP {answer.status}")
                continue
            if answer.status >= 400:
                raise RouterError("refused", f"HTTP {answer.status}")
            confirmation = answer_read(answer.status, answer.body)
            self._last = confirmation.share
            return confirmation
        raise RouterError(last.code, f"{last.detail} (after {self.max_attempts} attempts)")

    def read_share(self) -> float:
        """A deploy tool reports the share in force in its answer; there is no separate read."""
        if self._last is None:
            raise RouterError("garbage", "the tool has not reported a share yet")
        return self._last
