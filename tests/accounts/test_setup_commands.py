"""Production set-up commands: tenants and people with their roles, idempotent, refusing bad
input with a message naming it and writing nothing."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from accounts.models import Tenant, User

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


def run(*words: str, stdin: str | None = None) -> str:
    out = io.StringIO()
    kwargs = {"stdout": out, "stderr": io.StringIO()}
    if stdin is not None:
        kwargs["stdin"] = io.StringIO(stdin)
    call_command(*words, **kwargs)
    return out.getvalue()


def test_create_tenant_creates_once_and_then_says_unchanged():
    assert "created" in run("create_tenant", "acme-bank", "--name", "Acme Bank")
    assert "unchanged" in run("create_tenant", "acme-bank", "--name", "Acme Bank")
    assert Tenant.objects.get(slug="acme-bank").name == "Acme Bank"


def test_create_tenant_refuses_a_different_name_unless_updating():
    run("create_tenant", "acme-bank", "--name", "Acme Bank")
    with pytest.raises(CommandError, match="name: 'Acme Bank' → 'Acme Group'"):
        run("create_tenant", "acme-bank", "--name", "Acme Group")
    assert Tenant.objects.get(slug="acme-bank").name == "Acme Bank"
    assert "updated" in run("create_tenant", "acme-bank", "--name", "Acme Group", "--update")
    assert Tenant.objects.get(slug="acme-bank").name == "Acme Group"


def test_create_tenant_refuses_a_bad_slug_naming_the_field():
    with pytest.raises(CommandError, match="slug"):
        run("create_tenant", "not a slug", "--name", "Bad")
    assert not Tenant.objects.exists()


def test_create_user_makes_an_operator_staff_without_a_tenant():
    run("create_user", "ops1", "--role", "operator", "--password-stdin", stdin="s3cret-Passw0rd\n")
    user = User.objects.get(username="ops1")
    assert user.is_staff and user.tenant is None and not user.is_superuser
    assert set(user.groups.values_list("name", flat=True)) == {"operator"}
    assert user.check_password("s3cret-Passw0rd")
    assert user.has_perm("monitoring.operate_cluster")


def test_one_person_may_be_operator_and_approver():
    run("create_user", "lead", "--role", "operator", "--role", "approver")
    user = User.objects.get(username="lead")
    assert set(user.groups.values_list("name", flat=True)) == {"operator", "approver"}
    assert not user.has_usable_password()


def test_create_user_makes_a_customer_of_their_tenant_who_sees_only_it():
    run("create_tenant", "acme-bank", "--name", "Acme Bank")
    run("create_user", "alice", "--role", "customer", "--tenant", "acme-bank")
    user = User.objects.get(username="alice")
    assert user.tenant.slug == "acme-bank" and not user.is_staff
    assert user.is_customer and not user.sees_all_tenants


def test_a_second_identical_run_changes_nothing():
    run("create_tenant", "acme-bank", "--name", "Acme Bank")
    words = ("create_user", "alice", "--role", "customer", "--tenant", "acme-bank")
    run(*words, "--password-stdin", stdin="s3cret-Passw0rd\n")
    assert "unchanged" in run(*words, "--password-stdin", stdin="s3cret-Passw0rd\n")
    assert "unchanged" in run(*words)


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (("--role", "customer"), "tenant: A customer belongs to a tenant"),
        (("--role", "operator", "--tenant", "acme-bank"), "tenant: Operators and approvers"),
        (("--role", "customer", "--role", "approver", "--tenant", "acme-bank"), "roles:"),
        (("--role", "customer", "--tenant", "nobody"), "Unknown tenant 'nobody'"),
        (("--role", "operator", "--email", "not-an-address"), "email"),
    ],
)
def test_create_user_refuses_bad_input_and_writes_nothing(words, message):
    run("create_tenant", "acme-bank", "--name", "Acme Bank")
    with pytest.raises(CommandError, match=re.escape(message)):
        run("create_user", "bob", *words)
    assert not User.objects.filter(username="bob").exists()


def test_a_weak_password_is_refused_by_the_configured_validators(settings):
    settings.AUTH_PASSWORD_VALIDATORS = [
        {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"}
    ]
    with pytest.raises(CommandError, match="too short"):
        run("create_user", "bob", "--role", "operator", "--password-stdin", stdin="abc\n")
    assert not User.objects.filter(username="bob").exists()


def test_changing_an_existing_persons_roles_needs_update():
    run("create_user", "carol", "--role", "approver")
    with pytest.raises(CommandError, match="roles: \\['approver'\\] → \\['operator'\\]"):
        run("create_user", "carol", "--role", "operator")
    assert set(User.objects.get(username="carol").groups.values_list("name", flat=True)) == {
        "approver"
    }
    assert "updated" in run("create_user", "carol", "--role", "operator", "--update")
    assert set(User.objects.get(username="carol").groups.values_list("name", flat=True)) == {
        "operator"
    }


def test_the_readme_production_install_lists_every_set_up_command():
    text = (ROOT / "README.md").read_text()
    section = text.split("### Production install", 1)[1].split("\n## ", 1)[0]
    for command in ("create_tenant", "create_user", "create_cluster", "inventory_import"):
        assert f"manage.py {command}" in section, command
