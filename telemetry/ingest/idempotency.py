"""``Idempotency-Key``: a request runs once per ``(principal, key)``; a replay returns the
first answer and writes nothing, the same key with another payload is refused with 422.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

from django.db import IntegrityError, transaction

from telemetry.errors import IdempotencyConflict, IngestionError
from telemetry.models import IngestionBatch
from telemetry.store.counters import INGESTION_BATCHES, counter_add


def payload_digest(body: bytes, extra: str = "") -> str:
    return hashlib.sha256(extra.encode() + b"\0" + body).hexdigest()


def with_idempotency(
    *, key: str | None, principal: str, digest: str, work: Callable[[], dict]
) -> tuple[dict, bool]:
    """Run ``work`` once per ``(principal, key)``; returns ``(response, replayed)``.

    The key row is inserted in the same transaction as the samples, so a crash leaves neither
    and a concurrent duplicate waits on the unique index, then replays the committed answer.
    """
    if not key:
        return work(), False
    if len(key) > 200:
        raise IngestionError(
            "Idempotency-Key is longer than 200 characters", field="Idempotency-Key"
        )
    for _attempt in range(2):
        previous = IngestionBatch.objects.filter(principal=principal, key=key).first()
        if previous is not None:
            if previous.payload_sha256 != digest:
                raise IdempotencyConflict(
                    "this Idempotency-Key was already used with a different payload",
                    field="Idempotency-Key",
                )
            return previous.response, True
        try:
            with transaction.atomic():
                batch = IngestionBatch.objects.create(
                    principal=principal, key=key, payload_sha256=digest, response={}
                )
                counter_add(INGESTION_BATCHES, 1)  # in the batch's own transaction
                response = work()
                batch.response = json.loads(json.dumps(response))
                batch.save(update_fields=["response"])
                return response, False
        except IntegrityError:
            continue  # another request with this key committed first: replay its answer
    raise IngestionError("could not record the Idempotency-Key; retry", field="Idempotency-Key")
