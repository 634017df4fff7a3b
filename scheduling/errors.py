"""The one error a scheduler sync raises to its callers."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from rest_framework.exceptions import APIException


class SchedulerSyncFailed(APIException):
    """The scheduler could not be read (down, garbage, ``errors[]``, no known API version).
    Recorded as the source's last error; nothing of the sync was written. The API answers
    503 with the reason (no token, no answer body)."""

    status_code = 503
    default_detail = _("The scheduler could not be read.")
    default_code = "scheduler_unavailable"
