"""Errors the workflow services raise; the API maps them to HTTP statuses.

Each carries an English message template (marked for translation with ``gettext_noop``) and
its parameters: ``str(error)`` reads in the active language (the page's message, the API's
``detail`` per ``Accept-Language``), ``english`` is what the audit trail stores as text, and
``reason_data`` lets the audit page show a stored denial in the reader's language.
"""

from __future__ import annotations

from django.utils import translation
from django.utils.translation import gettext


class WorkflowError(Exception):
    """``message`` is the English template; ``params`` may be lazy labels (a state's name)."""

    def __init__(self, message: str, **params: object) -> None:
        self.message = message
        self.params = params
        with translation.override("en"):
            super().__init__(self._render(message))

    def _render(self, text: str) -> str:
        return text % {k: str(v) for k, v in self.params.items()} if self.params else text

    def __str__(self) -> str:
        return self._render(gettext(self.message))

    @property
    def english(self) -> str:
        return self.args[0]

    @property
    def reason_data(self) -> dict:
        """For the audit row of a refused command: shown again in the reader's language."""
        values = {k: v if isinstance(v, int | float) else str(v) for k, v in self.params.items()}
        return {"code": "message", "params": {"message": self.message, "values": values}}


class WorkflowConflict(WorkflowError):
    """Illegal in the current state, or someone else changed the plan first (HTTP 409)."""


class FourEyesViolation(WorkflowError):
    """The requester of a promotion tried to approve it themselves (HTTP 403)."""


class NotPermitted(WorkflowError):
    """The principal lacks the permission the command needs (HTTP 403)."""
