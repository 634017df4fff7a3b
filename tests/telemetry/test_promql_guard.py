"""The web tier's PromQL guard: a budget per request, a cap on reads waiting per source, and a
back-off after a failure; Celery tasks have none of them (only each read's own deadline)."""

from __future__ import annotations

import time

import pytest

from telemetry.read.promql.guard import (
    SourceBusy,
    note_failure,
    read_slot,
    states_clear,
    web_request_budget,
)

BASE = "http://thanos.example.com:9090"


@pytest.fixture(autouse=True)
def clean_states(settings):
    settings.PROMQL_MAX_INFLIGHT_PER_SOURCE = 2
    settings.PROMQL_BACKOFF_SECONDS = 15
    states_clear()
    yield
    states_clear()


def test_outside_a_web_request_a_read_gets_its_own_timeout_and_no_back_off():
    note_failure(BASE)  # a worker's failure is not the web tier's back-off
    with read_slot(BASE, 60) as seconds:
        assert seconds == 60


def test_in_a_web_request_a_read_gets_at_most_what_is_left_of_the_budget():
    with web_request_budget(3), read_slot(BASE, 60) as seconds:
        assert 2.5 < seconds <= 3


def test_a_spent_budget_refuses_the_next_read():
    with web_request_budget(0.1):
        time.sleep(0.15)
        with pytest.raises(SourceBusy, match="spent"), read_slot(BASE, 5):
            pass


def test_reads_beyond_the_cap_on_one_source_are_refused_at_once_others_are_not():
    with web_request_budget(10), read_slot(BASE, 5), read_slot(BASE, 5):
        with pytest.raises(SourceBusy, match="waiting"), read_slot(BASE, 5):
            pass
        with read_slot("http://other.example.com", 5) as seconds:
            assert seconds == 5
    with web_request_budget(10), read_slot(BASE, 5):  # the slots were given back
        pass


def test_after_a_failure_the_source_is_refused_at_once_for_the_back_off():
    with web_request_budget(10):
        note_failure(BASE)
        with pytest.raises(SourceBusy, match="failed moments ago"), read_slot(BASE, 5):
            pass
