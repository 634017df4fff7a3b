"""A deploy tool's signed confirmation of a share it was asked for (the callback), and the
timeout of confirmations that never came.

The callback body is ``{"idempotency_key", "status": "confirmed"|"refused", "share",
"reason"}``, signed with the router's secret either the Standard Webhooks way
(``webhook-id``, ``webhook-timestamp``, ``webhook-signature``; verified by the
``standardwebhooks`` library) or the portal's deprecated way (``X-Portal-Timestamp``,
``X-Portal-Signature``). A request carrying ``webhook-signature`` is verified the standard way
only. A timestamp more than ``CALLBACK_MAX_AGE_SECONDS`` off is refused (replays) either way
(the library's tolerance is the same 5 minutes). Confirmed at the share asked: the step's
analysis clock starts now; for a restore, the plan reaches the state its abort or rollback was
heading to. Refused, another share, or no callback within the router's window: the step
pauses (``traffic_unconfirmed``), a restore stays ``rollback_unconfirmed``. A callback for a
call a later call of the same workload superseded (an abort's restore after a pending set) is
audited and changes nothing: the aborted plan's workload never shows the old share.
"""

from __future__ import annotations

import hmac
import json
import time
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from rollout.models import (
    RouterCall,
    RouterKind,
    RouterOutcome,
    TrafficRouter,
)
from rollout.routers import RouterError
from rollout.routers.webhook import answer_read, router_secret
from rollout.services.audit import SYSTEM, audit_record
from rollout.services.plans import plan_lock
from rollout.services.router_dispatch import router_call_settle
from rollout.services.traffic import SHARE_TOLERANCE
from rollout.services.webhook_signing import (
    WebhookSecretInvalid,
    WebhookVerificationError,
    has_standard_signature,
    standard_verify,
    webhook_signature,
)

CALLBACK_MAX_AGE_SECONDS = 300


class CallbackRejected(Exception):
    """Not a valid callback (signature, age, body, unknown key): answered 4xx, nothing done.
    ``status`` is the HTTP status; the text names the problem."""

    def __init__(self, status: int, text: str) -> None:
        self.status = status
        super().__init__(text)


def _secret(router) -> str:
    try:
        return router_secret(router.webhook_secret_ref)
    except RouterError:
        raise CallbackRejected(503, "the router's secret is not configured or not valid") from None


def _signature_checked(router, body: bytes, headers) -> None:
    """Standard Webhooks if the request carries ``webhook-signature``, else the deprecated
    portal scheme; anything wrong is a 401 (a missing secret a 503) before anything is read."""
    if has_standard_signature(headers):
        secret = _secret(router)
        try:
            standard_verify(secret=secret, body=body, headers=headers)
        except WebhookVerificationError as exc:
            raise CallbackRejected(401, f"bad webhook-signature: {exc}") from None
        except WebhookSecretInvalid:  # router_secret refuses one first; kept as a 503 anyway
            raise CallbackRejected(503, "the router's secret is not valid") from None
        return
    stamp = headers.get("X-Portal-Timestamp", "")
    given = headers.get("X-Portal-Signature", "")
    if not stamp.isdigit() or abs(time.time() - int(stamp)) > CALLBACK_MAX_AGE_SECONDS:
        raise CallbackRejected(401, "missing or stale X-Portal-Timestamp")
    secret = _secret(router)
    expected = webhook_signature(secret=secret, timestamp=stamp, body=body)
    if not hmac.compare_digest(expected, given):
        raise CallbackRejected(401, "bad X-Portal-Signature")


def _verified(router, body: bytes, headers) -> dict:
    _signature_checked(router, body, headers)
    try:
        data = json.loads(body)
    except ValueError:
        raise CallbackRejected(400, "the body is not JSON") from None
    if not isinstance(data, dict) or not isinstance(data.get("idempotency_key"), str):
        raise CallbackRejected(400, "idempotency_key (a string) is required")
    return data


def router_callback(*, router, body: bytes, headers) -> RouterCall:
    """Apply a verified callback to its pending call (see the module docstring)."""
    if router.kind != RouterKind.WEBHOOK:
        raise CallbackRejected(404, "this router takes no callbacks")
    data = _verified(router, body, headers)
    call = (
        RouterCall.objects.filter(router=router, idempotency_key=data["idempotency_key"])
        .order_by("-id")
        .first()
    )
    if call is None:
        raise CallbackRejected(404, "no call with this idempotency_key")
    with transaction.atomic():
        plan = plan_lock(call.plan_id)
        call = RouterCall.objects.select_for_update().get(pk=call.pk)
        # A tool may call back before the portal committed its 202 (the call is still
        # ``intended``, sent once at least): the callback is the answer then.
        in_flight = call.outcome == RouterOutcome.INTENDED and call.attempts > 0
        if call.outcome == RouterOutcome.SUPERSEDED:
            # A later call of the workload replaced this one (an abort's restore): the
            # tool's word is recorded and changes nothing.
            audit_record(
                actor=SYSTEM,
                action="router_superseded",
                plan=plan,
                obj=call,
                reason=(
                    f"{call.router_label}: callback for a superseded call "
                    f"({body[:300].decode(errors='replace')}) changes nothing"
                )[:1000],
            )
            return call
        if call.outcome != RouterOutcome.PENDING and not in_flight:
            return call  # already answered (or timed out): a repeated callback changes nothing
        try:
            answer = answer_read(200, body)
        except RouterError as exc:
            outcome, text, share = exc.code, exc.detail, None
        else:
            share, text = answer.share, f"callback: {answer.answer}"
            if answer.pending:
                return call
            ok = share is not None and abs(share - call.desired_share) < SHARE_TOLERANCE
            outcome = RouterOutcome.CONFIRMED if ok else RouterOutcome.MISMATCH
        router_call_settle(
            plan,
            call,
            outcome=outcome,
            share=share,
            text=text,
            actor=SYSTEM,
            action="router_callback",
        )
    return call


def router_confirmations_expire(*, now: datetime | None = None) -> int:
    """Pending calls past their router's callback window time out (and pause their step)."""
    now = now or timezone.now()
    expired = 0
    for call_id in RouterCall.objects.filter(outcome=RouterOutcome.PENDING).values_list(
        "pk", flat=True
    ):
        with transaction.atomic():
            plan_id = RouterCall.objects.values_list("plan_id", flat=True).get(pk=call_id)
            plan = plan_lock(plan_id)
            call = RouterCall.objects.select_for_update().get(pk=call_id)
            router = TrafficRouter.objects.filter(pk=call.router_id).first()
            window = router.confirm_within_seconds if router else 300
            if call.outcome != RouterOutcome.PENDING or (now - call.at).total_seconds() <= window:
                continue
            text = f"no callback within {window} s"
            router_call_settle(
                plan,
                call,
                outcome=RouterOutcome.TIMEOUT,
                share=None,
                text=text,
                actor=SYSTEM,
                action="router_callback",
            )
            expired += 1
    return expired
