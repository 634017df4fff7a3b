"""Login brute-force protection (django-axes): per username + IP address, 429 while locked."""

from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.utils import timezone

from tests.conftest import PASSWORD

ATTACKER = "203.0.113.7"
ELSEWHERE = "198.51.100.20"
LOCKED_MESSAGE = "Too many failed logins"


def attempt(client, username: str, password: str, ip: str = ATTACKER):
    return client.post("/login/", {"username": username, "password": password}, REMOTE_ADDR=ip)


def signed_in_as(client, username: str) -> bool:
    response = client.get("/", REMOTE_ADDR=ELSEWHERE)
    return response.status_code == 200 and response.wsgi_request.user.username == username


def lock_out(client, username: str = "op", ip: str = ATTACKER):
    """Fail exactly AXES_FAILURE_LIMIT times; return the answers."""
    return [
        attempt(client, username, "wrong-guess", ip) for _ in range(settings.AXES_FAILURE_LIMIT)
    ]


@pytest.mark.django_db
def test_the_defaults_are_five_failures_and_fifteen_minutes():
    assert settings.AXES_FAILURE_LIMIT == 5
    assert settings.AXES_COOLOFF_TIME == timedelta(minutes=15)
    assert settings.AXES_LOCKOUT_PARAMETERS == [["username", "ip_address"]]
    assert settings.AUTHENTICATION_BACKENDS[0] == "axes.backends.AxesStandaloneBackend"
    assert "django.contrib.auth.backends.ModelBackend" in settings.AUTHENTICATION_BACKENDS
    assert settings.MIDDLEWARE[-1] == "axes.middleware.AxesMiddleware"


@pytest.mark.django_db
def test_wrong_passwords_below_the_limit_show_the_form_again(client, users):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        response = attempt(client, "op", "wrong-guess")
        assert response.status_code == 200
        assert b"did not match" in response.content
    # One short of the limit, the right password still works.
    assert attempt(client, "op", PASSWORD).status_code == 302
    assert signed_in_as(client, "op")


@pytest.mark.django_db
def test_five_failures_lock_that_username_from_that_address_even_with_the_right_password(
    client, users
):
    answers = lock_out(client)
    assert [r.status_code for r in answers[:-1]] == [200] * (settings.AXES_FAILURE_LIMIT - 1)
    assert answers[-1].status_code == 429  # the failure that reaches the limit

    response = attempt(client, "op", PASSWORD)
    assert response.status_code == 429
    text = response.content.decode()
    assert LOCKED_MESSAGE in text
    assert "Try again in 15 minutes" in text and "failed 5 times" in text
    assert "Content-Security-Policy" in response  # the lockout page is an ordinary page
    assert not signed_in_as(client, "op")


@pytest.mark.django_db
def test_another_address_or_another_username_is_unaffected(client, users, django_user_model):
    lock_out(client, "op", ATTACKER)
    # The same user from elsewhere signs in.
    assert attempt(client, "op", PASSWORD, ip=ELSEWHERE).status_code == 302
    assert signed_in_as(client, "op")
    client.post("/logout/")
    # Another user from the attacker's address signs in, and is not locked by a wrong guess.
    assert attempt(client, "appr", "wrong-guess", ip=ATTACKER).status_code == 200
    assert attempt(client, "appr", PASSWORD, ip=ATTACKER).status_code == 302
    assert signed_in_as(client, "appr")


@pytest.mark.django_db
def test_the_lock_lifts_after_the_cool_off(client, users):
    lock_out(client)
    assert attempt(client, "op", PASSWORD).status_code == 429
    # Move the recorded failures back past the cool-off instead of waiting 15 minutes.
    earlier = timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1)
    assert AccessAttempt.objects.filter(username="op", ip_address=ATTACKER).exists()
    AccessAttempt.objects.update(attempt_time=earlier)
    assert attempt(client, "op", PASSWORD).status_code == 302
    assert signed_in_as(client, "op")


@pytest.mark.django_db
def test_the_cool_off_does_not_lift_early(client, users):
    lock_out(client)
    almost = timezone.now() - settings.AXES_COOLOFF_TIME + timedelta(minutes=1)
    AccessAttempt.objects.update(attempt_time=almost)
    assert attempt(client, "op", PASSWORD).status_code == 429


@pytest.mark.django_db
def test_the_admin_login_is_protected_by_the_same_lock(client, users):
    lock_out(client)
    response = client.post(
        "/admin/login/",
        {"username": "op", "password": PASSWORD, "next": "/admin/"},
        REMOTE_ADDR=ATTACKER,
    )
    assert response.status_code == 429
    assert LOCKED_MESSAGE in response.content.decode()


@pytest.mark.django_db
def test_a_forged_forwarded_for_header_does_not_dodge_the_lock(client, users):
    lock_out(client)
    response = client.post(
        "/login/",
        {"username": "op", "password": PASSWORD},
        REMOTE_ADDR=ATTACKER,
        HTTP_X_FORWARDED_FOR=ELSEWHERE,
    )
    assert response.status_code == 429


@pytest.mark.django_db
def test_behind_a_trusted_proxy_the_forwarded_address_is_what_is_locked(client, users, settings):
    settings.TRUSTED_PROXY_COUNT = 1
    proxy = "10.0.0.2"

    def via_proxy(username, password, ip):
        return client.post(
            "/login/",
            {"username": username, "password": password},
            REMOTE_ADDR=proxy,
            HTTP_X_FORWARDED_FOR=ip,
        )

    for _ in range(settings.AXES_FAILURE_LIMIT):
        via_proxy("op", "wrong-guess", ATTACKER)
    assert via_proxy("op", PASSWORD, ATTACKER).status_code == 429
    # Everyone else behind the same proxy is unaffected.
    assert via_proxy("op", PASSWORD, ELSEWHERE).status_code == 302


@pytest.mark.django_db
def test_force_login_used_throughout_the_tests_is_unaffected(client_as):
    assert client_as("operator").get("/dashboards/").status_code == 200
