"""Sending tasks after commit never fails the command that committed."""

from __future__ import annotations

import logging

import pytest
from kombu.exceptions import OperationalError

from cluster_portal.web.dispatch import dispatch_after_commit, dispatch_now


def test_a_broker_error_is_logged_and_reported_not_raised(caplog):
    def send():
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    with caplog.at_level(logging.WARNING, logger="cluster_portal.web.dispatch"):
        assert dispatch_now("webhook delivery 7", send) is False
    assert "could not queue webhook delivery 7" in caplog.text
    assert "OperationalError" in caplog.text


def test_a_successful_send_is_reported():
    sent = []
    assert dispatch_now("x", lambda: sent.append(1)) is True and sent == [1]


@pytest.mark.django_db
def test_the_send_waits_for_the_commit_and_a_rollback_sends_nothing(
    django_capture_on_commit_callbacks,
):
    from django.db import transaction

    sent = []
    with django_capture_on_commit_callbacks(execute=True):
        with transaction.atomic():
            dispatch_after_commit("kept", lambda: sent.append("kept"))
            assert sent == []
    try:
        with transaction.atomic():
            dispatch_after_commit("lost", lambda: sent.append("lost"))
            raise RuntimeError("roll back")
    except RuntimeError:
        pass
    assert sent == ["kept"]
