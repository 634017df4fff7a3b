"""Errors the ingestion path raises; the API turns them into 4xx answers naming the problem."""

from __future__ import annotations


class IngestionError(ValueError):
    """A batch was rejected; nothing of it was written. ``reason`` is the refusal it is
    counted under (``telemetry.families.identity.Refusal``; ``invalid_body`` when not given)."""

    status_code = 400
    code = "invalid"

    def __init__(
        self,
        message: str,
        *,
        row: int | None = None,
        field: str | None = None,
        reason: str | None = None,
    ):
        super().__init__(message)
        self.message = message
        self.row = row
        self.field = field
        self.reason = reason or "invalid_body"

    def as_dict(self) -> dict:
        body: dict = {"detail": self.message, "code": self.code}
        if self.row is not None:
            body["row"] = self.row
        if self.field is not None:
            body["field"] = self.field
        return body


class IdempotencyConflict(IngestionError):
    """The same Idempotency-Key came back with a different payload."""

    status_code = 422
    code = "idempotency_conflict"
