"""Errors the workflow services raise; the API maps them to HTTP statuses."""

from __future__ import annotations


class WorkflowConflict(Exception):
    """Illegal in the current state, or someone else changed the plan first (HTTP 409)."""


class FourEyesViolation(Exception):
    """The requester of a promotion tried to approve it themselves (HTTP 403)."""


class NotPermitted(Exception):
    """The principal lacks the permission the command needs (HTTP 403)."""
